export * from "./errors";
export * from "./hash";
export * from "./http";
export * from "./schemas";
export * from "./store";
export * from "./stored-response";
