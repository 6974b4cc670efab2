/**
 * The theme choice and its cookie, shared by the server (app/layout.tsx renders the chosen theme)
 * and the switch. Not in ThemeSwitch.tsx: a value a server component imports from a "use client"
 * module is a client reference, not the value — the layout read the cookie under a name that was
 * not "ic-theme", so a manual choice never survived a reload.
 */
export type ThemeChoice = "auto" | "light" | "dark";
export const THEME_COOKIE = "ic-theme";

/** The choice a cookie value names; anything else is "auto". */
export const themeOf = (cookie: string | undefined): ThemeChoice => (cookie === "light" || cookie === "dark" ? cookie : "auto");
