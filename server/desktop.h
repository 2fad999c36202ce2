#pragma once

/* The desktop: the X display deskd works on. Either an existing one
 * (--display / $DISPLAY) or an embedded Xvfb started with -displayfd, with a
 * window manager and --launch programs, all stopped by PID when deskd stops.
 * Each subsystem opens its own X connection to desktop_display_name(). */

#include <stdbool.h>

struct options;

/** Connect to, or start, the display. Returns 0 or -errno (logged). */
int desktop_start(const struct options* opts);
/** Stop what desktop_start started (WM, launched programs, Xvfb). Idempotent. */
void desktop_stop(void);

/** ":N"; valid after desktop_start until desktop_stop. */
const char* desktop_display_name(void);
/** Did deskd start the Xvfb itself? */
bool desktop_is_embedded(void);
/** Is the X server reachable right now? (a cheap cached check, any thread) */
bool desktop_available(void);
/** Screen size in pixels (cached; refreshed on reconnect). */
void desktop_screen_size(int* width, int* height);

/** The desktop lock: actions that change the desktop run one at a time, in
 *  arrival order (a ticket lock). Captures do not take it. */
void desktop_lock(void);
void desktop_unlock(void);
