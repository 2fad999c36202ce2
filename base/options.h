#pragma once

/* Command-line options: one table drives the parser, DESKD_<NAME> environment
 * variables and --help. The command line wins over the environment. */

#include <stdbool.h>
#include <stdio.h>

enum options_mode {
	OPTIONS_SERVE = 0,
	OPTIONS_RECORD,	/* deskd record --window ID --out FILE [--fps N] */
	OPTIONS_DOCTOR,
	OPTIONS_GNOME_EXTENSION,	/* deskd gnome-extension [--shell-version N] */
	OPTIONS_HELP,
	OPTIONS_VERSION,
	OPTIONS_MAN,	/* --help-man (hidden): the man page, for make man */
};

/* The zero value is the default: the batch tool alone keeps tools/list
 * small (DESIGN.md 3); the split tools are there on request. */
enum options_tools {
	OPTIONS_TOOLS_BATCH = 0,
	OPTIONS_TOOLS_SPLIT,
	OPTIONS_TOOLS_BOTH,
};

/* --approve: which acting calls wait for a person's answer. */
enum options_approve {
	OPTIONS_APPROVE_NONE = 0,
	OPTIONS_APPROVE_DESTRUCTIVE,	/* tools marked destructive */
	OPTIONS_APPROVE_ALL,		/* every acting call */
};

#define OPTIONS_MAX_LIST 16

struct options {
	enum options_mode mode;

	char* listen;		/* "ADDR:PORT" */
	char* listen_host;	/* parsed from listen, without brackets */
	int listen_port;
	bool listen_given;	/* --listen was set (matters with --stdio) */
	char* ready_file;
	char* display;		/* NULL: start an embedded Xvfb */
	char* desktop;		/* --desktop x11|wayland|gnome|mutter: what the embedded desktop is */
	bool wayland;		/* --desktop wayland */
	bool gnome;		/* --desktop gnome or mutter */
	bool gnome_shell;	/* --desktop gnome: GNOME Shell, not Mutter alone */
	char* gnome_bus;	/* --gnome-bus: a running GNOME session's bus */
	bool gnome_portal;	/* --gnome-portal: reach it through the desktop portal */
	char* wayland_display;	/* --wayland-display, or $WAYLAND_DISPLAY without $DISPLAY */
	char* sway_socket;	/* $SWAYSOCK when attached to a Wayland compositor */
	char* xwayland_display;	/* $DISPLAY beside it: the compositor's Xwayland */
	char* virtual_size;	/* "WxH" */
	int virtual_width, virtual_height;
	char* wm;		/* "none" disables; NULL: openbox if installed */
	char* launch[OPTIONS_MAX_LIST];
	int n_launch;
	char* allow_launch[OPTIONS_MAX_LIST];	/* what the launch tool may start */
	int n_allow_launch;
	char* token;
	char* token_file;
	char* person_token;		/* --person-token: the dashboard's control */
	char* person_token_file;
	char* view_token;
	bool no_auth;
	bool display_reattach;	/* --display-reattach */
	char* allow_origin[OPTIONS_MAX_LIST];
	int n_allow_origin;
	char* data_dir;
	char* output_root[OPTIONS_MAX_LIST];
	int n_output_root;
	char* files_root;	/* NULL: <data_dir>/files */
	long max_file_size;	/* file tools, REST PUT bodies */
	int max_image_dimension;
	enum options_tools tools;
	bool stdio;
	bool log_json;
	int log_level;		/* enum log_level */
	bool conformance_fixtures;
	int max_recordings;
	int memory_idle_s;		/* give capture memory back after; 0: never */
	long max_body_bytes;
	long max_clipboard_body_bytes;	/* clipboard_write, full token */
	long max_json_memory;		/* all JSON parses in progress */
	int max_sessions;		/* MCP sessions at once */
	int max_view_sessions;		/* of them, the view token's */
	int session_timeout_s;		/* idle MCP session expiry */
	int new_session_timeout_s;	/* ... for one that made no request */
	int max_connections;		/* HTTP and WebSocket, open at once */
	int max_connections_per_ip;
	int header_timeout_ms;		/* to complete each request head */

	/* People in the loop (docs/CONTROL.md) */
	int control_idle_timeout_s;	/* a person's lease ends after this long idle */
	bool control_allows_observe;	/* the agent may look while a person acts */
	enum options_approve approve;
	int approve_timeout_s;		/* no answer: denied */

	/* deskd record */
	unsigned long record_window;
	char* record_out;
	int record_fps;
	int shell_version;	/* deskd gnome-extension; 0: ask gnome-shell */
};

/** Parse argv (and DESKD_* from the environment) into self.
 *  Returns 0, or -EINVAL after writing a one-line reason to err. */
int options_parse(struct options* self, int argc, char* argv[],
		char* err, size_t err_size);

/** Print --help, generated from the option table. */
void options_print_help(FILE* out);

/** Print the man page (troff), generated from the same table as --help. */
void options_print_man(FILE* out, const char* version);

/** Free the strings owned by self. */
void options_deinit(struct options* self);

/** Is the listen host a loopback address (127.0.0.0/8, ::1, localhost)? */
bool options_listen_is_loopback(const struct options* self);

/** The options in force for this process; set once by main before threads start. */
const struct options* options_get(void);
void options_set_global(const struct options* self);
