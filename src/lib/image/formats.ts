/** File extensions picked up when walking a folder of images (files named one by one are always tried). */
export const IMAGE_EXTENSIONS: ReadonlySet<string> = new Set(['.jpg', '.jpeg', '.jpe', '.png', '.webp', '.gif', '.avif', '.tif', '.tiff'])
