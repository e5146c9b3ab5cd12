/**
 * Whose a job is: the name of the API key that made it (MOD_API_KEY's is `default`). A request with another key
 * is told the job does not exist, as for an id that never did.
 */

/**
 * Whether a request that came with the key named `asker` may see or delete a job of `owner`. A server that needs no
 * key has no owners to tell apart (`asker` undefined); a job made without a key (before the server had one)
 * belongs to no one in particular.
 */
export function visibleTo(owner: string | undefined, asker: string | undefined): boolean {
  return owner === undefined || asker === undefined || owner === asker
}
