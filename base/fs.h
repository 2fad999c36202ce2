#pragma once

/* Directories deskd makes for itself (the data dir, its recordings and
 * files folders). */

/** mkdir -p with mode 0700 (less what the umask takes) for every directory
 *  it creates, the parents included (e.g. ~/.local/state); one that exists
 *  already is left as it is (the caller checks its owner and mode where
 *  that matters). 0 or -errno. */
int fs_make_dir(const char* path);
