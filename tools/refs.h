#pragma once

/* The accessibility ref registry (tools/refs.c): "e12" names one element
 * process-wide, keyed by its bus name and object path (stable for the
 * object's life in GTK, Chromium, Firefox), with a locator (role, name and
 * index among look-alikes from the window down) to re-find an element whose
 * path is gone. At most REFS_MAX live at once, the oldest forgotten first.
 * Private to tools/: tools/ui.c gives refs out and resolves them; computer_use
 * (tools/input_tools.c) reaches them through tools_ui_ref_point() (actions.h),
 * which reads the element before it points at it. Any thread. */

#include "a11y/a11y.h"

#include <stdbool.h>
#include <stdint.h>

#define REFS_MAX 20000

/* What a ref remembers of its element, as last seen. */
struct ref {
	unsigned num;		/* the 12 of "e12"; never reused */
	struct a11y_id id;
	uint32_t window;
	int pid;
	int role;
	char* name;
	char* locator;
};

/** A snapshot numbers many elements under one lock: refs_number_locked()
 *  between these. */
void refs_lock(void);
void refs_unlock(void);
/** The ref number of this element (new or existing), updating what was seen
 *  (window, role, name, locator when given). 0 when out of memory. */
unsigned refs_number_locked(const struct a11y_id* id, uint32_t window, int pid, int role,
		const char* name, const char* locator);
/** A copy of ref num (strings owned by the copy: ref_clear() it); false when
 *  unknown or forgotten. */
bool refs_get(unsigned num, struct ref* out);
/** The element was found again at a new path: the ref follows it (another
 *  ref that held that path is forgotten). */
void refs_move(unsigned num, const struct a11y_id* id);
/** "e12" -> 12; 0 when malformed. */
unsigned refs_parse(const char* s);
/** Free a copy's strings. */
void ref_clear(struct ref* r);
