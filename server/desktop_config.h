#pragma once

/* desktop/'s settings from the command line (server/desktop_config.c): the
 * one place that reads the options for desktop/, which never sees them. */

#include "desktop/desktop.h"

struct options;

/** Fill *out from opts: out borrows opts' strings and lists, so opts must
 *  outlive every use of desktop/ (main's options do). */
void server_desktop_config(const struct options* opts, struct desktop_config* out);
