import type { Jsonified } from "@/lib/api/json";
import type { AlertsAnswer } from "@/lib/insights/alerts";
import type { KeyQualityResult } from "@/lib/insights/key-quality";
import type { RetentionAdvice } from "@/lib/insights/retention";
import type { RecordStory } from "@/lib/insights/story";

/** The insights' API answers as the browser parses them (bigints and dates as strings). */
export type RetentionJson = Jsonified<RetentionAdvice>;
export type KeyQualityJson = Jsonified<KeyQualityResult>;
export type AlertsJson = Jsonified<AlertsAnswer>;
export type AlertJson = AlertsJson["alerts"][number];
export type StoryJson = Jsonified<RecordStory>;
