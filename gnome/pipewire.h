#pragma once
/* libpipewire loaded at the first GNOME stream (private to gnome/): deskd
 * links none of PipeWire, so an X11 or wlroots deskd (and the container
 * image, which carries neither) does not need it. The functions stream.c
 * calls are pointers in one table, filled by pipewire_load() with dlopen
 * and dlsym from the soname deskd was built against. Only out-of-line
 * functions go here (SPA's and pw_core_add_listener are inline or macros
 * over the interfaces, and need no symbol). */
#include <pipewire/pipewire.h>
#include <stdbool.h>
#include <stddef.h>

#define PIPEWIRE_FUNCTIONS(X) \
	X(pw_init) X(pw_properties_new) \
	X(pw_thread_loop_new) X(pw_thread_loop_destroy) X(pw_thread_loop_start) \
	X(pw_thread_loop_stop) X(pw_thread_loop_lock) X(pw_thread_loop_unlock) \
	X(pw_thread_loop_signal) X(pw_thread_loop_get_loop) X(pw_thread_loop_get_time) \
	X(pw_thread_loop_timed_wait_full) \
	X(pw_context_new) X(pw_context_destroy) X(pw_context_connect) X(pw_context_connect_fd) \
	X(pw_core_disconnect) \
	X(pw_stream_new) X(pw_stream_destroy) X(pw_stream_connect) X(pw_stream_add_listener) \
	X(pw_stream_dequeue_buffer) X(pw_stream_queue_buffer) X(pw_stream_update_params) \
	X(pw_stream_set_error) X(pw_stream_state_as_string)

struct pipewire {
#define PIPEWIRE_POINTER(name) __typeof__(name)* name;
	PIPEWIRE_FUNCTIONS(PIPEWIRE_POINTER)
#undef PIPEWIRE_POINTER
};

/** The table; its pointers are set once pipewire_load() returned 0. */
extern struct pipewire pw;

/** Load the library once (any thread; later calls return the first
 *  outcome): 0, or -1 with why (the library or symbol that is missing). */
int pipewire_load(char* why, size_t size);
