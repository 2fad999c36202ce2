#pragma once

/* Directories deskd makes for itself (the data dir, its recordings and
 * files folders). */

/** mkdir -p with mode 0700 (less what the umask takes) for every directory
 *  it creates, the parents included (e.g. ~/.local/state); one that exists
 *  already is left as it is (the caller checks its owner and mode where
 *  that matters). 0 or -errno. */
int fs_make_dir(const char* path);

struct stat;
/** Open path to read a secret deskd keeps (a token): not through a symlink
 *  (-ELOOP), a regular file (-EINVAL), this user's with no group or other
 *  bits (-EPERM), so nobody could have planted or read it. The fd, or
 *  -errno (-ENOENT: there is none). *st is filled once fstat ran, for the
 *  caller's message. */
int fs_open_private(const char* path, struct stat* st);
