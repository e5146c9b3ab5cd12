/** Names of new categories, head labels, hash lists and text rules: they end up in JSON keys, URLs and terminal tables. */
export const CATEGORY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/
/**
 * CATEGORY_NAME_PATTERN in words, after "may". "ASCII": a Chinese or accented name is made of letters too, and was
 * refused with a message saying that letters were allowed.
 */
export const CATEGORY_NAME_RULE = 'may hold only ASCII letters and digits, "_", "-" and ".", start with a letter or a digit, and be at most 64 long'
