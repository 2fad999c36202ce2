/* STUB: replaced by the owner of this file. */
#include "server/desktop.h"
#include <errno.h>
#include <stddef.h>
int desktop_start(const struct options* opts) { return 0; }
void desktop_stop(void) { }
const char* desktop_display_name(void) { return ""; }
bool desktop_is_embedded(void) { return false; }
bool desktop_available(void) { return false; }
void desktop_screen_size(int* width, int* height) { *width = *height = 0; }
void desktop_lock(void) { }
void desktop_unlock(void) { }
