"use client";

import { useState } from "react";
import { THEME_COOKIE, type ThemeChoice } from "./theme";

/**
 * Light or dark by hand, beside the automatic choice (the system's setting). Kept in a
 * cookie for a year, per browser, so the server renders the chosen theme at once (no flash).
 */
export function ThemeSwitch({ initial }: { initial: ThemeChoice }) {
  const [theme, setTheme] = useState<ThemeChoice>(initial);
  return (
    <label className="theme-switch">
      <span className="visually-hidden">Theme</span>
      <select
        value={theme}
        data-testid="theme-switch"
        onChange={(e) => {
          const next = e.target.value as ThemeChoice;
          setTheme(next);
          if (next === "auto") {
            document.documentElement.removeAttribute("data-theme");
            document.cookie = `${THEME_COOKIE}=; Path=/; Max-Age=0; SameSite=Lax`;
          } else {
            document.documentElement.dataset.theme = next;
            document.cookie = `${THEME_COOKIE}=${next}; Path=/; Max-Age=31536000; SameSite=Lax`;
          }
        }}
      >
        <option value="auto">Auto theme</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </label>
  );
}
