/** Names of new categories, head labels, hash lists and text rules: they end up in JSON keys, URLs and terminal tables. */
export const CATEGORY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/
