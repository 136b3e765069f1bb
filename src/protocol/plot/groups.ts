// Colour groups (task prefixes) for plots: the most important keep their own colour, the rest
// share "other", so a legend stays readable whatever the number of prefixes.

/** Groups past the most important ones share this name and a neutral colour: legends stay readable. */
export const OTHER_GROUP = "other";
export const OTHER_COLOR = "#b0b0b0";
/** Distinct colours a person can still tell apart in one legend (tableau20 has 20). */
export const MAX_GROUPS = 20;

/** The most important groups keep their name; past MAX_GROUPS, the rest become OTHER_GROUP. */
export function rankGroups(weights: ReadonlyMap<string, number>): { domain: string[]; named: string[]; colorGroup(group: string): string } {
  const ranked = [...weights.keys()].filter((group) => group !== OTHER_GROUP);
  const capped = ranked.length > MAX_GROUPS;
  const named = capped ? ranked.slice(0, MAX_GROUPS - 1) : ranked;
  const kept = new Set(named);
  return {
    domain: capped || weights.has(OTHER_GROUP) ? [...named, OTHER_GROUP] : named,
    named,
    colorGroup: (group) => (kept.has(group) ? group : OTHER_GROUP),
  };
}
