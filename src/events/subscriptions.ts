import { EVENT_TYPES, type EventType } from './event-types.js';

/** `["*"]` subscribes an endpoint to every event type, including types added later. */
export const ALL_EVENTS = '*';

export const isEventType = (value: string): value is EventType => (EVENT_TYPES as readonly string[]).includes(value);

/** Whether an endpoint subscribed to `events` receives an event of `type`. */
export const subscribesTo = (events: readonly string[], type: string): boolean => events.includes(ALL_EVENTS) || events.includes(type);
