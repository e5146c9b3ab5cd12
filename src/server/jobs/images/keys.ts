/** Where an image job lives in Redis; the video queue's folder sweep reads it too, so that it keeps their uploads. */
export const metaKey = (id: string): string => `mod:imagejob:${id}`
export const linesKey = (id: string): string => `mod:imagejob:${id}:lines`
export const chunksKey = (id: string): string => `mod:imagejob:${id}:chunks`
/** Present while the job's place is reserved for its upload being read, with a time to live its reader renews. */
export const reservedKey = (id: string): string => `mod:imagejob:${id}:reserved`
export const clientKey = (client: string): string => `mod:imagejobs:client:${client}`
