import type { Config, DomainLimit } from '../config/schema.js';

/**
 * A destination of the delivery gate: a group (a mailbox provider, an MX host of none, or a
 * recipient domain with limits of its own) seen from one source address. Its key is
 * `group|source` (`default`: the system's address); limits and back-off are kept per key.
 */
export const keyOf = (group: string, source: string | null): string => `${group}|${source ?? 'default'}`;

export const groupOfKey = (key: string): string => {
  const bar = key.lastIndexOf('|');
  return bar >= 0 ? key.slice(0, bar) : key;
};

/** Where a group's limits come from: its domain's own, its provider's, or the default. */
export function limitSetting(config: Config['delivery'], group: string): string {
  if (Object.hasOwn(config.domainLimits, group)) return `delivery.domainLimits["${group}"]`;
  if (Object.hasOwn(config.providerLimits, group)) return `delivery.providerLimits["${group}"]`;
  return 'delivery.defaultDomainLimit';
}

/** The limits of a destination key (or a bare group). */
export const destinationLimitOf =
  (config: Config['delivery']) =>
  (key: string): DomainLimit => {
    const group = groupOfKey(key);
    return (
      (Object.hasOwn(config.domainLimits, group)
        ? config.domainLimits[group]
        : Object.hasOwn(config.providerLimits, group)
          ? config.providerLimits[group]
          : undefined) ?? config.defaultDomainLimit
    );
  };
