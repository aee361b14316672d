/** The node flags of `npm start` (scripts/startFlags.mjs). @throws Error when the start script has another shape */
export function startNodeFlags(): string[];
