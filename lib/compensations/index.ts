export * from "./actions";
export * from "./config";
export * from "./model";
