import { EVENT_TYPES, type EventType } from './event-types.js';
import { isOneOf } from '../shared/one-of.js';

/** `["*"]` subscribes an endpoint to every event type, including types added later. */
export const ALL_EVENTS = '*';

export const isEventType = (value: string): value is EventType => isOneOf(EVENT_TYPES, value);

/** Whether an endpoint subscribed to `events` receives an event of `type`. */
export const subscribesTo = (events: readonly string[], type: string): boolean =>
  events.includes(ALL_EVENTS) || events.includes(type);
