import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { PrismaClient } from "../generated/prisma/client";
import { ROLES, type Role } from "./permissions";
import { createUser } from "./users";

/**
 * Demo users for the embedded database (and the e2e Postgres database): one
 * per role, `<role>@demo.local`, each with a random password generated once and
 * written to DEMO_CREDENTIALS_FILE (default .data/demo-credentials.json, mode
 * 0600). `npm start` prints that file at every start. Never on a production
 * database: the server only calls this in embedded mode.
 */
export const DEFAULT_DEMO_CREDENTIALS_FILE = ".data/demo-credentials.json";

export interface DemoCredential {
  role: Role;
  email: string;
  password: string;
}

export interface DemoCredentialsFile {
  note: string;
  createdAt: string;
  users: DemoCredential[];
}

export function demoCredentialsPath(env: Record<string, string | undefined> = process.env, cwd = process.cwd()): string {
  return path.resolve(cwd, env.DEMO_CREDENTIALS_FILE || DEFAULT_DEMO_CREDENTIALS_FILE);
}

export function demoEmail(role: Role): string {
  return `${role}@demo.local`;
}

/** 20 characters of base64url: 120 random bits. */
export function randomPassword(): string {
  return randomBytes(15).toString("base64url");
}

export function writeCredentialsFile(file: string, users: DemoCredential[]): DemoCredentialsFile {
  const content: DemoCredentialsFile = {
    note: "Demo sign-in for a throwaway database only. Generated once, with the database; delete both to start over.",
    createdAt: new Date().toISOString(),
    users,
  };
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return content;
}

/**
 * Creates the five demo users (audited as users.create by the system) and
 * writes their passwords to `file`. Does nothing when the database already has
 * users: the passwords were written when they were created.
 */
export async function seedDemoUsers(prisma: PrismaClient, file: string): Promise<DemoCredential[] | null> {
  if ((await prisma.consoleUser.count()) > 0) return null;
  const users: DemoCredential[] = ROLES.map((role) => ({ role, email: demoEmail(role), password: randomPassword() }));
  for (const u of users) {
    await createUser(
      prisma,
      { type: "system", label: "demo setup" },
      { email: u.email, name: `Demo ${u.role}`, password: u.password, roles: [u.role], reason: "demo user for a throwaway database" },
    );
  }
  writeCredentialsFile(file, users);
  return users;
}
