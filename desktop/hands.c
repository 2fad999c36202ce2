/* The one input context of the process: one X connection for XTest and one
 * pool of spare keycodes on the display (two contexts would rebind each
 * other's keycodes). Replaced when the display went away; destroyed at exit,
 * which puts every spare keycode back. */
#include "desktop/desktop_private.h"
#include "base/log.h"
#include "input/input.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

static pthread_mutex_t ctx_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct input* ctx_input;
static int ctx_users;
static unsigned ctx_disconnects;	/* desktop_disconnects() when it connected */
static bool ctx_atexit;

static void input_at_exit(void)
{
	/* A stopped X server would hold the exit forever: leave the keymap (the
	 * context stays referenced, so it is no leak either). */
	if (desktop__hung(NULL)) {
		log_warn("input: the X server does not answer; exiting without restoring the spare keycodes");
		return;
	}
	pthread_mutex_lock(&ctx_mutex);
	struct input* in = ctx_users == 0 ? ctx_input : NULL;
	if (in)
		ctx_input = NULL;
	pthread_mutex_unlock(&ctx_mutex);
	/* Puts every spare keycode back to NoSymbol. */
	input_destroy(in);
}

struct input* desktop_input_get(char* err, size_t size)
{
	pthread_mutex_lock(&ctx_mutex);
	/* A context from before a display loss is dead even if it does not
	 * know it yet (its first use would fail). */
	if (ctx_input && ctx_users == 0 && (!input_alive(ctx_input)
			|| ctx_disconnects != desktop_disconnects())) {
		log_info("input: X connection lost; reconnecting");
		input_destroy(ctx_input);
		ctx_input = NULL;
	}
	if (!ctx_input) {
		const char* name = desktop_display_name();
		ctx_disconnects = desktop_disconnects();
		ctx_input = input_new(name, err, size);
		if (ctx_input) {
			log_debug("input: connected to %s, %d spare keycodes", name,
					input_spare_keycodes(ctx_input));
			if (!ctx_atexit && atexit(input_at_exit) == 0)
				ctx_atexit = true;
		}
	}
	struct input* in = ctx_input;
	if (in)
		ctx_users++;
	pthread_mutex_unlock(&ctx_mutex);
	return in;
}

void desktop_input_put(struct input* in)
{
	if (!in)
		return;
	pthread_mutex_lock(&ctx_mutex);
	ctx_users--;
	pthread_mutex_unlock(&ctx_mutex);
}
