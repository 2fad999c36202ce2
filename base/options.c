#include "base/options.h"
#include "base/log.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <unistd.h>

enum opt_kind { OPT_STRING, OPT_LIST, OPT_INT, OPT_FLAG, OPT_CUSTOM };

struct opt_spec {
	const char* name;	/* long name; env is DESKD_<NAME upper, - -> _> */
	const char* metavar;
	const char* help;
	const char* def;	/* shown in --help and applied when unset */
	enum opt_kind kind;
	size_t offset;		/* field in struct options */
	size_t count_offset;	/* for OPT_LIST */
};

#define F(field) offsetof(struct options, field)
#define LIST(field) OPT_LIST, F(field), F(n_##field)

static const struct opt_spec opts[] = {
	{ "listen", "ADDR:PORT", "Address to serve on; port 0 picks a free one.",
		"127.0.0.1:7800", OPT_STRING, F(listen), 0 },
	{ "ready-file", "FILE", "Write {\"url\",\"pid\"} here (atomically) once serving.",
		NULL, OPT_STRING, F(ready_file), 0 },
	{ "display", ":N", "Use an existing X display (default $DISPLAY).",
		NULL, OPT_STRING, F(display), 0 },
	{ "desktop", "x11|wayland|gnome|mutter", "The embedded desktop started when no display is "
		"given: Xvfb with openbox, a headless sway (with Xwayland), a headless GNOME Shell "
		"(with PipeWire; windows through deskd's extension), or Mutter alone (lighter, no "
		"window list).",
		"x11", OPT_STRING, F(desktop), 0 },
	{ "wayland-display", "NAME", "Use a running wlroots compositor (sway, Hyprland, river, ...): a "
		"socket name in $XDG_RUNTIME_DIR or an absolute path (default $WAYLAND_DISPLAY when "
		"$DISPLAY is not set); its windows through $SWAYSOCK.",
		NULL, OPT_STRING, F(wayland_display), 0 },
	{ "gnome-bus", "ADDRESS", "Drive a running GNOME session through Mutter's RemoteDesktop and "
		"ScreenCast on its session bus (in that session: $DBUS_SESSION_BUS_ADDRESS); its "
		"windows through deskd's GNOME Shell extension when it is enabled there.",
		NULL, OPT_STRING, F(gnome_bus), 0 },
	{ "gnome-portal", NULL, "With --gnome-bus: reach the session through the desktop portal "
		"(org.freedesktop.portal.RemoteDesktop and ScreenCast) instead of Mutter's API, as a "
		"sandboxed deskd must; the person approves deskd in the desktop's dialog (within 120 "
		"s). Where the portal can remember it (GNOME 45 on), its restore token is kept in "
		"<data-dir>/gnome-portal-token for the next start. Text off the layout is typed by a "
		"paste through the portal's Clipboard (xdg-desktop-portal 1.18 on), else refused. "
		"Chosen by itself when the bus has the portal but no Mutter API.",
		NULL, OPT_FLAG, F(gnome_portal), 0 },
	{ "virtual", "WxH", "Size of the embedded Xvfb started when no display is given.",
		"1280x800", OPT_STRING, F(virtual_size), 0 },
	{ "wm", "NAME", "Window manager for the embedded display; 'none' for none.",
		"openbox if installed", OPT_STRING, F(wm), 0 },
	{ "display-reattach", NULL, "After losing --display, attach to whatever X server serves it next (default: only the same server).",
		NULL, OPT_FLAG, F(display_reattach), 0 },
	{ "launch", "CMD", "Start a program on the display at startup (repeatable); 'none' for none.",
		"xterm on the embedded desktop", LIST(launch) },
	{ "allow-launch", "PROGRAM", "A program the launch tool may start (repeatable): an absolute path, or a name found on deskd's PATH; either allows that file.",
		"any program on the embedded desktop, none on --display", LIST(allow_launch) },
	{ "token", "T", "The agent's bearer token: MCP, REST, watching (default: generated, saved in the data dir as token).",
		NULL, OPT_STRING, F(token), 0 },
	{ "token-file", "FILE", "Read the agent's token from FILE.",
		NULL, OPT_STRING, F(token_file), 0 },
	{ "person-token", "T", "The person's token: the dashboard's control, hand-back, approvals, pause, help answers, and all the agent may do (default: generated, saved in the data dir as person-token).",
		NULL, OPT_STRING, F(person_token), 0 },
	{ "person-token-file", "FILE", "Read the person's token from FILE.",
		NULL, OPT_STRING, F(person_token_file), 0 },
	{ "view-token", "T", "A token that may watch but not act.",
		NULL, OPT_STRING, F(view_token), 0 },
	{ "no-auth", NULL, "No token (loopback only).",
		NULL, OPT_FLAG, F(no_auth), 0 },
	{ "allow-origin", "ORIGIN", "Extra allowed browser origin (repeatable).",
		NULL, LIST(allow_origin) },
	{ "data-dir", "DIR", "Token file, recordings, screenshots.",
		"$XDG_STATE_HOME/deskd", OPT_STRING, F(data_dir), 0 },
	{ "output-root", "DIR", "A directory that 'out' paths may point into (repeatable).",
		"the data dir", LIST(output_root) },
	{ "files-root", "DIR", "The directory the file tools read and write (created 0700).",
		"<data-dir>/files", OPT_STRING, F(files_root), 0 },
	{ "max-file-size", "BYTES", "Largest file file_upload writes and file_download reads "
		"(REST PUT bodies too; MCP bodies stay within --max-clipboard-body).",
		"67108864", OPT_INT, F(max_file_size), 0 },
	{ "max-image-dimension", "N", "Longest side of returned screenshots; 0 = native.",
		"1280", OPT_INT, F(max_image_dimension), 0 },
	{ "tools", "batch|split|both", "Tool surface: computer_use (one tool, every action), computer_<action>, or both.",
		"batch", OPT_CUSTOM, F(tools), 0 },
	{ "stdio", NULL, "MCP over stdin/stdout; HTTP only if --listen is given.",
		NULL, OPT_FLAG, F(stdio), 0 },
	{ "log-format", "text|json", "Log line format (stderr).",
		"text", OPT_CUSTOM, F(log_json), 0 },
	{ "log-level", "LEVEL", "error, warning, info, debug or trace.",
		"info", OPT_CUSTOM, F(log_level), 0 },
	{ "conformance-fixtures", NULL, "Add the MCP conformance suite's fixtures (tests only).",
		NULL, OPT_FLAG, F(conformance_fixtures), 0 },
	{ "max-recordings", "N", "How many recordings may run at once.",
		"4", OPT_INT, F(max_recordings), 0 },
	{ "memory-idle", "SECONDS", "After this long without a screenshot or live frame, give "
		"back what is kept warm for the next one (capture buffers, X shared images, PNG "
		"band states, cached screenshots); 0: keep it.",
		"10", OPT_INT, F(memory_idle_s), 0 },
	{ "max-body", "BYTES", "Largest request body (K, M, G suffixes: KiB, MiB, GiB); a "
		"larger one gets 413. Enough for every tool call but a large clipboard_write.",
		"1048576", OPT_INT, F(max_body_bytes), 0 },
	{ "max-clipboard-body", "BYTES", "Largest body of a clipboard_write call with the full "
		"token (REST, MCP and stdio): its 8 MiB of data, as JSON.",
		"16777216", OPT_INT, F(max_clipboard_body_bytes), 0 },
	{ "max-json-memory", "BYTES", "Memory all request bodies being parsed as JSON may take "
		"at once (503 past it); one body may take 8 times its size + 1 MiB (413 past it).",
		"134217728", OPT_INT, F(max_json_memory), 0 },
	{ "max-sessions", "N", "MCP sessions at once; at the limit the least recently active "
		"idle one (no call in progress, no open stream), never-used ones first, is ended "
		"to make room.",
		"512", OPT_INT, F(max_sessions), 0 },
	{ "max-view-sessions", "N", "MCP sessions the view token may hold; at the limit its "
		"least recently active idle one is ended to make room.",
		"32", OPT_INT, F(max_view_sessions), 0 },
	{ "session-timeout", "SECONDS", "An idle MCP session ends after this long.",
		"1800", OPT_INT, F(session_timeout_s), 0 },
	{ "new-session-timeout", "SECONDS", "An MCP session that has made no request since "
		"initialize ends after this long.",
		"60", OPT_INT, F(new_session_timeout_s), 0 },
	{ "max-connections", "N", "Connections open at once (HTTP and WebSocket); at the limit "
		"the oldest idle one is closed to make room.",
		"512", OPT_INT, F(max_connections), 0 },
	{ "max-connections-per-ip", "N", "Connections open at once from one address; at the "
		"limit its oldest idle one is closed to make room.",
		"128", OPT_INT, F(max_connections_per_ip), 0 },
	{ "header-timeout", "MS", "Each request head must be complete within MS of connecting or "
		"of the previous response, and a body may not fall MS behind 1 KB/s; else the "
		"connection is closed.",
		"10000", OPT_INT, F(header_timeout_ms), 0 },
	{ "control-idle-timeout", "SECONDS", "A person's control of the desktop (dashboard) "
		"ends after this long without input.",
		"300", OPT_INT, F(control_idle_timeout_s), 0 },
	{ "control-allows-observe", NULL, "While a person has control, the agent may still take "
		"screenshots (default: refused, the person may be typing a password).",
		NULL, OPT_FLAG, F(control_allows_observe), 0 },
	{ "approve", "none|destructive|all", "Acting calls that wait for a person's Approve in the "
		"dashboard (or the MCP client's elicitation) first.",
		"none", OPT_CUSTOM, F(approve), 0 },
	{ "approve-timeout", "SECONDS", "An approval not answered within this long is a denial (the default fits inside the MCP SDKs' 60 s request timeout).",
		"50", OPT_INT, F(approve_timeout_s), 0 },
	{ "window", "ID", "deskd record: the window to record.",
		NULL, OPT_CUSTOM, F(record_window), 0 },
	{ "out", "FILE", "deskd record: the MP4 to write.",
		NULL, OPT_STRING, F(record_out), 0 },
	{ "fps", "N", "deskd record: frames per second (1-60).",
		"30", OPT_INT, F(record_fps), 0 },
	{ "shell-version", "N", "deskd gnome-extension: the GNOME Shell major version to write "
		"the extension for (default: what gnome-shell --version says).",
		NULL, OPT_INT, F(shell_version), 0 },
	{ 0 },
};

static const struct options* options__global;

const struct options* options_get(void)
{
	return options__global;
}

void options_set_global(const struct options* self)
{
	options__global = self;
}

void options_print_help(FILE* out)
{
	fprintf(out,
		"Usage: deskd [options]                    serve (default)\n"
		"       deskd record --window ID --out FILE [--fps N]\n"
		"       deskd doctor\n"
		"       deskd gnome-extension [--shell-version N]\n"
		"       deskd --help | --version\n\n"
		"Options (each also DESKD_<NAME> in the environment; the command line wins):\n");
	for (const struct opt_spec* o = opts; o->name; o++) {
		char left[64];
		snprintf(left, sizeof(left), "--%s%s%s", o->name,
				o->metavar ? " " : "", o->metavar ? o->metavar : "");
		fprintf(out, "  %-32s %s", left, o->help);
		if (o->def)
			fprintf(out, " [%s]", o->def);
		fputc('\n', out);
	}
}

/* troff text: backslashes, hyphens (so they stay ASCII), and a leading '.'
 * or '\'' that would start a request. */
static void man_text(FILE* out, const char* s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", out);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
	}
}

static void env_name(const struct opt_spec* o, char* buf, size_t size);

void options_print_man(FILE* out, const char* version)
{
	fprintf(out,
		".\\\" deskd(1), generated by `deskd --help-man` from the option table\n"
		".\\\" (base/options.c), like --help. Do not edit: run `make man`.\n"
		".TH DESKD 1 \"\" \"deskd %s\" \"User Commands\"\n", version);
	fputs(
		".SH NAME\n"
		"deskd \\- a computer\\-use server for Linux/X11: MCP, REST and a live view on one port\n"
		".SH SYNOPSIS\n"
		".B deskd\n[\\fIoptions\\fR]\n.br\n"
		".B deskd record\n\\fB\\-\\-window\\fR \\fIID\\fR \\fB\\-\\-out\\fR \\fIFILE\\fR "
		"[\\fB\\-\\-fps\\fR \\fIN\\fR]\n.br\n"
		".B deskd doctor\n[\\fIoptions\\fR]\n.br\n"
		".B deskd gnome\\-extension\n[\\fB\\-\\-shell\\-version\\fR \\fIN\\fR]\n.br\n"
		".B deskd\n\\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR\n"
		".SH DESCRIPTION\n"
		"An AI agent (any MCP client) sees the screen and uses the mouse and keyboard of an "
		"X11 desktop; a person watches it live in a browser; scripts do the same over REST "
		"with \\fBcurl\\fR(1); single windows record to MP4.\n"
		".PP\n"
		"With no display given (no \\fB\\-\\-display\\fR, no \\fB$DISPLAY\\fR), deskd starts its "
		"own embedded desktop: \\fBXvfb\\fR(1), \\fBopenbox\\fR(1) when installed, and an "
		"\\fBxterm\\fR(1) unless \\fB\\-\\-launch\\fR is given (\\fB\\-\\-launch none\\fR starts "
		"nothing). They are stopped with deskd.\n"
		".PP\n"
		"At startup deskd prints, on standard error, the dashboard URL (the person's token "
		"in its fragment), the MCP URL (\\fB/mcp\\fR, Streamable HTTP) and a line to add it to "
		"Claude Code. Logs go to standard error, never standard output.\n"
		".SH COMMANDS\n"
		".TP\n.BR serve \" (the default)\"\n"
		"Serve MCP, REST and the dashboard on \\fB\\-\\-listen\\fR until SIGINT or SIGTERM.\n"
		".TP\n.B record\n"
		"Record one window (\\fB\\-\\-window\\fR) to an MP4 file (\\fB\\-\\-out\\fR) until Ctrl\\-C; "
		"the file is created 0600 and never replaces an existing one.\n"
		".TP\n.B doctor\n"
		"Check the display and its extensions, the programs, the port, the data directory and "
		"the token file; exit 0 when healthy. When a deskd already serves on the "
		"\\fB\\-\\-listen\\fR address, check that server and its display.\n"
		".TP\n.B gnome\\-extension\n"
		"Write deskd's GNOME Shell extension (the window list for \\fB\\-\\-gnome\\-bus\\fR) "
		"into \\fB$XDG_DATA_HOME\\fR/gnome\\-shell/extensions (default ~/.local/share), in the "
		"form the installed GNOME Shell loads (or \\fB\\-\\-shell\\-version\\fR's).\n"
		".SH OPTIONS\n"
		"Each option can also be set in the environment as \\fBDESKD_\\fR\\fINAME\\fR "
		"(upper case, \\- as _); the command line wins.\n", out);
	for (const struct opt_spec* o = opts; o->name; o++) {
		char env[64];
		env_name(o, env, sizeof(env));
		fputs(".TP\n\\fB\\-\\-", out);
		man_text(out, o->name);
		fputs("\\fR", out);
		if (o->metavar) {
			fputs(" \\fI", out);
			man_text(out, o->metavar);
			fputs("\\fR", out);
		}
		fputc('\n', out);
		man_text(out, o->help);
		fputc('\n', out);
		fputs(".br\n", out);
		if (o->def) {
			fputs("Default: ", out);
			man_text(out, o->def);
			fputs(". ", out);
		}
		fputs("Environment: \\fB", out);
		man_text(out, env);
		fputs("\\fR.\n", out);
	}
	fputs(
		".TP\n.BR \\-\\-help \", \" \\-h\nPrint the options and exit.\n"
		".TP\n.B \\-\\-version\nPrint the version and exit.\n"
		".SH ENVIRONMENT\n"
		".TP\n.B DISPLAY\nThe X display to use when \\fB\\-\\-display\\fR and \\fB\\-\\-virtual\\fR "
		"are not given.\n"
		".TP\n.B XDG_STATE_HOME\nThe default data directory is \\fB$XDG_STATE_HOME/deskd\\fR "
		"(else \\fB~/.local/state/deskd\\fR).\n"
		".SH FILES\n"
		".TP\n.I <data\\-dir>/token\nThe agent's bearer token, generated on the first start (mode 0600) "
		"unless \\fB\\-\\-token\\fR or \\fB\\-\\-token\\-file\\fR is given.\n"
		".TP\n.I <data\\-dir>/person\\-token\nThe person's token (the dashboard's control and "
		"approvals), generated on the first start (mode 0600) unless \\fB\\-\\-person\\-token\\fR "
		"or \\fB\\-\\-person\\-token\\-file\\fR is given.\n"
		".TP\n.I <data\\-dir>/recordings\nRecordings started without an \\fBout\\fR path "
		"(MP4, mode 0600). An \\fBout\\fR path (screenshots, recordings) must lie under an "
		"\\fB\\-\\-output\\-root\\fR, the data directory by default.\n"
		".SH EXIT STATUS\n"
		"0: a clean stop (doctor: healthy). 1: a runtime error (doctor: not healthy). "
		"2: bad usage.\n"
		".SH EXAMPLES\n"
		".nf\n"
		"deskd                                   # embedded desktop, 127.0.0.1:7800\n"
		"deskd \\-\\-virtual 1920x1080 \\-\\-launch firefox\n"
		"deskd \\-\\-display :0 \\-\\-listen 127.0.0.1:0 \\-\\-ready\\-file /tmp/deskd.json\n"
		"deskd \\-\\-stdio                           # MCP over stdin/stdout\n"
		"T=$(cat ~/.local/state/deskd/token)\n"
		"curl \\-\\-fail\\-with\\-body \\-sS \\-H \"Authorization: Bearer $T\" \\e\n"
		"    http://127.0.0.1:7800/api/v1/screenshot \\-o screen.png\n"
		".fi\n"
		".SH SEE ALSO\n"
		"\\fBXvfb\\fR(1), \\fBopenbox\\fR(1), \\fBxterm\\fR(1), \\fBcurl\\fR(1); the README and "
		"docs/DESIGN.md in deskd's sources.\n", out);
}

static void* field(struct options* self, const struct opt_spec* o)
{
	return (char*)self + o->offset;
}

static int parse_int(const char* s, long min, long max, long* out)
{
	char* end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Byte counts: a number with an optional K, M or G (KiB, MiB, GiB). */
static bool is_bytes(const struct opt_spec* o)
{
	return o->offset == F(max_body_bytes) || o->offset == F(max_clipboard_body_bytes)
		|| o->offset == F(max_json_memory) || o->offset == F(max_file_size);
}

static int parse_bytes(const char* s, long* out)
{
	char num[32];
	size_t n = strlen(s);
	int shift = 0;
	if (n && n < sizeof(num) && strchr("kKmMgG", s[n - 1])) {
		shift = strchr("kK", s[n - 1]) ? 10 : strchr("mM", s[n - 1]) ? 20 : 30;
		memcpy(num, s, n - 1);
		num[n - 1] = '\0';
		s = num;
	}
	long v;
	if (parse_int(s, 0, (1L << 40) >> shift, &v) < 0)
		return -EINVAL;
	*out = v << shift;
	return 0;
}

static int set_value(struct options* self, const struct opt_spec* o,
		const char* value, char* err, size_t err_size)
{
	long v;
	switch (o->kind) {
	case OPT_STRING: {
		char** p = field(self, o);
		free(*p);
		*p = strdup(value);
		return *p ? 0 : -ENOMEM;
	}
	case OPT_LIST: {
		char** list = field(self, o);
		int* n = (int*)((char*)self + o->count_offset);
		if (*n >= OPTIONS_MAX_LIST) {
			snprintf(err, err_size, "--%s: at most %d values", o->name,
					OPTIONS_MAX_LIST);
			return -EINVAL;
		}
		list[*n] = strdup(value);
		if (!list[*n])
			return -ENOMEM;
		(*n)++;
		return 0;
	}
	case OPT_INT:
		if (is_bytes(o)) {
			if (parse_bytes(value, &v) < 0) {
				snprintf(err, err_size, "--%s: '%s' is not a byte count (N, NK, NM "
						"or NG)", o->name, value);
				return -EINVAL;
			}
			*(long*)field(self, o) = v;
			return 0;
		}
		if (parse_int(value, 0, 1L << 40, &v) < 0) {
			snprintf(err, err_size, "--%s: '%s' is not a non-negative integer",
					o->name, value);
			return -EINVAL;
		}
		if (v > 1 << 30)
			goto bad;
		else
			*(int*)field(self, o) = (int)v;
		return 0;
	case OPT_FLAG: {
		bool on = !(strcmp(value, "0") == 0 || strcasecmp(value, "false") == 0
				|| strcasecmp(value, "no") == 0);
		*(bool*)field(self, o) = on;
		return 0;
	}
	case OPT_CUSTOM:
		if (o->offset == F(tools)) {
			if (strcmp(value, "both") == 0)
				self->tools = OPTIONS_TOOLS_BOTH;
			else if (strcmp(value, "batch") == 0)
				self->tools = OPTIONS_TOOLS_BATCH;
			else if (strcmp(value, "split") == 0)
				self->tools = OPTIONS_TOOLS_SPLIT;
			else
				goto bad;
		} else if (o->offset == F(log_json)) {
			if (strcmp(value, "json") == 0)
				self->log_json = true;
			else if (strcmp(value, "text") == 0)
				self->log_json = false;
			else
				goto bad;
		} else if (o->offset == F(approve)) {
			if (strcmp(value, "none") == 0)
				self->approve = OPTIONS_APPROVE_NONE;
			else if (strcmp(value, "destructive") == 0)
				self->approve = OPTIONS_APPROVE_DESTRUCTIVE;
			else if (strcmp(value, "all") == 0)
				self->approve = OPTIONS_APPROVE_ALL;
			else
				goto bad;
		} else if (o->offset == F(log_level)) {
			int l = log_level_parse(value);
			if (l < 0)
				goto bad;
			self->log_level = l;
		} else if (o->offset == F(record_window)) {
			char* end;
			errno = 0;
			unsigned long id = strtoul(value, &end, 0);
			if (errno || end == value || *end || id == 0 || id > 0xffffffffUL)
				goto bad;
			self->record_window = id;
		}
		return 0;
	}
bad:
	snprintf(err, err_size, "--%s: bad value '%s'", o->name, value);
	return -EINVAL;
}

static const struct opt_spec* find_opt(const char* name, size_t len)
{
	for (const struct opt_spec* o = opts; o->name; o++)
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
			return o;
	return NULL;
}

static void env_name(const struct opt_spec* o, char* buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "DESKD_");
	for (const char* p = o->name; *p && n + 1 < size; p++)
		buf[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
	buf[n] = '\0';
}

static char* env_copy(const char* name)
{
	const char* v = getenv(name);
	return v && *v ? strdup(v) : NULL;
}

/* Which display: --display (X11) or --wayland-display; else --virtual or
 * --desktop mean the embedded one; else $DISPLAY, then $WAYLAND_DISPLAY (an
 * X11 session inside Wayland keeps the X11 route it had; a GNOME or KDE
 * session, which offers no wlroots protocol, works through Xwayland). */
static int choose_display(struct options* self, const bool* given, char* err, size_t err_size)
{
	static const struct {
		const char* name;
		bool wayland, gnome, shell;
	} DESKTOPS[] = {
		{ "x11", false, false, false },
		{ "wayland", true, false, false },
		{ "gnome", false, true, true },
		{ "mutter", false, true, false },
	};
	const char* d = self->desktop ? self->desktop : "x11";
	size_t k = 0, n = sizeof(DESKTOPS) / sizeof(DESKTOPS[0]);
	while (k < n && strcmp(d, DESKTOPS[k].name) != 0)
		k++;
	if (k == n) {
		snprintf(err, err_size, "--desktop: '%s' is not x11, wayland, gnome or mutter", d);
		return -EINVAL;
	}
	self->wayland = DESKTOPS[k].wayland;
	self->gnome = DESKTOPS[k].gnome;
	self->gnome_shell = DESKTOPS[k].shell;
	if (!!self->display + !!self->wayland_display + !!self->gnome_bus > 1) {
		snprintf(err, err_size, "--display, --wayland-display and --gnome-bus name different "
				"desktops: give one");
		return -EINVAL;
	}
	if (self->gnome_portal && !self->gnome_bus) {
		snprintf(err, err_size, "--gnome-portal goes with --gnome-bus (the session's bus)");
		return -EINVAL;
	}
	if (self->gnome_bus) {
		self->gnome = true;	/* attached: the compositor is the session's */
		self->wayland = false;
		return 0;
	}
	bool embedded = given[find_opt("virtual", 7) - opts] || given[find_opt("desktop", 7) - opts];
	if (!self->display && !self->wayland_display && !embedded) {
		self->display = env_copy("DISPLAY");
		if (!self->display)
			self->wayland_display = env_copy("WAYLAND_DISPLAY");
	}
	if (self->wayland_display) {
		self->sway_socket = env_copy("SWAYSOCK");
		self->xwayland_display = env_copy("DISPLAY");
	}
	return 0;
}

static int parse_listen(struct options* self, char* err, size_t err_size)
{
	const char* s = self->listen;
	const char* colon;
	char host[256];
	if (s[0] == '[') {
		const char* close = strchr(s, ']');
		if (!close || close[1] != ':')
			goto bad;
		colon = close + 1;
		size_t n = (size_t)(close - s - 1);
		if (n >= sizeof(host))
			goto bad;
		memcpy(host, s + 1, n);
		host[n] = '\0';
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			goto bad;
		size_t n = (size_t)(colon - s);
		if (n == 0 || n >= sizeof(host))
			goto bad;
		memcpy(host, s, n);
		host[n] = '\0';
	}
	long port;
	if (parse_int(colon + 1, 0, 65535, &port) < 0)
		goto bad;
	free(self->listen_host);
	self->listen_host = strdup(host);
	self->listen_port = (int)port;
	return self->listen_host ? 0 : -ENOMEM;
bad:
	snprintf(err, err_size, "--listen: '%s' is not ADDR:PORT", s);
	return -EINVAL;
}

bool options_listen_is_loopback(const struct options* self)
{
	const char* h = self->listen_host;
	if (!h)
		return false;
	if (strcmp(h, "localhost") == 0)
		return true;
	/* Addresses only: a name such as 127.example.com is not loopback. */
	struct in_addr v4;
	struct in6_addr v6;
	if (inet_pton(AF_INET, h, &v4) == 1)
		return (ntohl(v4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, h, &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

/* The command words and their modes. */
static const struct {
	const char* word;
	enum options_mode mode;
} commands[] = {
	{ "serve", OPTIONS_SERVE },
	{ "record", OPTIONS_RECORD },
	{ "doctor", OPTIONS_DOCTOR },
	{ "gnome-extension", OPTIONS_GNOME_EXTENSION },
};

/* The command word: the index of the first option, or -EINVAL. */
static int parse_command(struct options* self, int argc, char* argv[], char* err,
		size_t err_size)
{
	if (argc <= 1 || argv[1][0] == '-')
		return 1;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].word) == 0) {
			self->mode = commands[i].mode;
			return 2;
		}
	snprintf(err, err_size, "unknown command '%s' (try --help)", argv[1]);
	return -EINVAL;
}

/* The command line from argv[i], remembering what it set in given: 0, 1
 * (--help, --version: a mode that ends parsing) or -errno. */
static int parse_args(struct options* self, int argc, char* argv[], int i, bool* given,
		char* err, size_t err_size)
{
	for (; i < argc; i++) {
		const char* a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			self->mode = OPTIONS_HELP;
			return 1;
		}
		if (strcmp(a, "--help-man") == 0) {	/* hidden: make man */
			self->mode = OPTIONS_MAN;
			return 1;
		}
		if (strcmp(a, "--version") == 0) {
			self->mode = OPTIONS_VERSION;
			return 1;
		}
		if (strncmp(a, "--", 2) != 0) {
			snprintf(err, err_size, "unexpected argument '%s' (try --help)", a);
			return -EINVAL;
		}
		const char* name = a + 2;
		const char* eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		const struct opt_spec* o = find_opt(name, len);
		if (!o) {
			snprintf(err, err_size, "unknown option '%s' (try --help)", a);
			return -EINVAL;
		}
		const char* value;
		if (o->kind == OPT_FLAG) {
			value = eq ? eq + 1 : "1";
		} else if (eq) {
			value = eq + 1;
		} else if (i + 1 < argc) {
			value = argv[++i];
		} else {
			snprintf(err, err_size, "--%s needs a value (%s)", o->name, o->metavar);
			return -EINVAL;
		}
		int rc = set_value(self, o, value, err, err_size);
		if (rc < 0)
			return rc;
		given[o - opts] = true;
	}
	return 0;
}

/* DESKD_<NAME> for what the command line did not set. */
static int parse_env(struct options* self, bool* given, char* err, size_t err_size)
{
	for (const struct opt_spec* o = opts; o->name; o++) {
		if (given[o - opts])
			continue;
		char env[64];
		env_name(o, env, sizeof(env));
		const char* value = getenv(env);
		if (value && *value) {
			int rc = set_value(self, o, value, err, err_size);
			if (rc < 0)
				return rc;
			given[o - opts] = true;
		}
	}
	return 0;
}

static int apply_defaults(struct options* self, const bool* given, char* err, size_t err_size)
{
	int rc;
	self->listen_given = given[0];
	if (!self->listen)
		self->listen = strdup("127.0.0.1:7800");
	if (!self->virtual_size)
		self->virtual_size = strdup("1280x800");
	if (!self->listen || !self->virtual_size)
		return -ENOMEM;
	if (!given[find_opt("max-image-dimension", 19) - opts])
		self->max_image_dimension = 1280;
	if (!given[find_opt("log-level", 9) - opts])
		self->log_level = LOG_INFO;
	if (!given[find_opt("max-recordings", 14) - opts])
		self->max_recordings = 4;
	/* Numeric defaults come from the table. */
	for (const struct opt_spec* o = opts; o->name; o++)
		if (o->kind == OPT_INT && o->def && !given[o - opts]
				&& strspn(o->def, "0123456789") == strlen(o->def)
				&& (rc = set_value(self, o, o->def, err, err_size)) < 0)
			return rc;
	if (!given[find_opt("fps", 3) - opts])
		self->record_fps = 30;
	if (!given[find_opt("max-connections", 15) - opts])
		self->max_connections = 512;
	if (!given[find_opt("max-connections-per-ip", 22) - opts])
		self->max_connections_per_ip = 128;
	if (!given[find_opt("header-timeout", 14) - opts])
		self->header_timeout_ms = 10000;
	return 0;
}

/* $XDG_STATE_HOME/deskd, ~/.local/state/deskd, or /tmp/deskd-UID. */
static int default_data_dir(struct options* self)
{
	if (self->data_dir)
		return 0;
	const char* state = getenv("XDG_STATE_HOME");
	const char* home = getenv("HOME");
	char buf[4096];
	if (state && *state)
		snprintf(buf, sizeof(buf), "%s/deskd", state);
	else if (home && *home)
		snprintf(buf, sizeof(buf), "%s/.local/state/deskd", home);
	else
		snprintf(buf, sizeof(buf), "/tmp/deskd-%ld", (long)getuid());
	self->data_dir = strdup(buf);
	return self->data_dir ? 0 : -ENOMEM;
}

static int refuse(char* err, size_t err_size, const char* message)
{
	snprintf(err, err_size, "%s", message);
	return -EINVAL;
}

/* The bounds of the numbers and the combinations that cannot work. */
static int check_limits(const struct options* self, char* err, size_t err_size)
{
	if (self->no_auth && !options_listen_is_loopback(self)) {
		snprintf(err, err_size, "--no-auth is allowed only when listening on loopback, not on %s",
				self->listen_host);
		return -EINVAL;
	}
	if (self->max_connections < 1 || self->max_connections > 100000)
		return refuse(err, err_size, "--max-connections: 1 to 100000");
	if (self->max_connections_per_ip < 1)
		return refuse(err, err_size, "--max-connections-per-ip: at least 1");
	if (self->max_body_bytes < 1024 || self->max_clipboard_body_bytes < 1024)
		return refuse(err, err_size, "--max-body and --max-clipboard-body: at least 1024 (bytes)");
	if (self->max_file_size < 1)
		return refuse(err, err_size, "--max-file-size: at least 1 (bytes)");
	if (self->max_json_memory < (1L << 20))
		return refuse(err, err_size, "--max-json-memory: at least 1M");
	if (self->memory_idle_s < 0 || self->memory_idle_s > 86400)
		return refuse(err, err_size, "--memory-idle: 0 (never) to 86400 (seconds)");
	if (self->max_sessions < 1 || self->max_view_sessions < 1)
		return refuse(err, err_size, "--max-sessions and --max-view-sessions: at least 1");
	if (self->session_timeout_s < 1 || self->new_session_timeout_s < 1)
		return refuse(err, err_size, "--session-timeout and --new-session-timeout: at least 1 "
				"(seconds)");
	if (self->header_timeout_ms < 100)
		return refuse(err, err_size, "--header-timeout: at least 100 (milliseconds)");
	if (self->control_idle_timeout_s < 1 || self->approve_timeout_s < 1
			|| self->approve_timeout_s > 3600)
		return refuse(err, err_size, "--control-idle-timeout: at least 1; --approve-timeout: 1 to 3600 "
				"(seconds)");
	if (self->max_image_dimension != 0 && self->max_image_dimension < 16)
		return refuse(err, err_size, "--max-image-dimension: 0 (native) or at least 16");
	if (self->mode == OPTIONS_RECORD && (!self->record_window || !self->record_out))
		return refuse(err, err_size, "deskd record needs --window ID and --out FILE");
	if (self->mode == OPTIONS_RECORD && (self->record_fps < 1 || self->record_fps > 60))
		return refuse(err, err_size, "--fps: 1 to 60");
	return 0;
}

/* Command line first, remembering what it set; then the environment fills
 * the rest; then the defaults; then what follows from them. */
int options_parse(struct options* self, int argc, char* argv[],
		char* err, size_t err_size)
{
	memset(self, 0, sizeof(*self));
	bool given[sizeof(opts) / sizeof(opts[0])] = { false };
	int rc = parse_command(self, argc, argv, err, err_size);
	if (rc < 0)
		return rc;
	if ((rc = parse_args(self, argc, argv, rc, given, err, err_size)) != 0)
		return rc < 0 ? rc : 0;
	if ((rc = parse_env(self, given, err, err_size)) < 0
			|| (rc = apply_defaults(self, given, err, err_size)) < 0
			|| (rc = parse_listen(self, err, err_size)) < 0)
		return rc;
	if (sscanf(self->virtual_size, "%dx%d", &self->virtual_width,
			&self->virtual_height) != 2 || self->virtual_width < 16
			|| self->virtual_height < 16 || self->virtual_width > 16384
			|| self->virtual_height > 16384) {
		snprintf(err, err_size, "--virtual: '%s' is not WxH (16..16384)",
				self->virtual_size);
		return -EINVAL;
	}
	if ((rc = choose_display(self, given, err, err_size)) < 0
			|| (rc = default_data_dir(self)) < 0)
		return rc;
	return check_limits(self, err, err_size);
}

void options_deinit(struct options* self)
{
	free(self->listen);
	free(self->listen_host);
	free(self->ready_file);
	free(self->display);
	free(self->desktop);
	free(self->gnome_bus);
	free(self->wayland_display);
	free(self->sway_socket);
	free(self->xwayland_display);
	free(self->virtual_size);
	free(self->wm);
	for (int i = 0; i < self->n_launch; i++)
		free(self->launch[i]);
	for (int i = 0; i < self->n_allow_launch; i++)
		free(self->allow_launch[i]);
	free(self->token);
	free(self->token_file);
	free(self->person_token);
	free(self->person_token_file);
	free(self->view_token);
	for (int i = 0; i < self->n_allow_origin; i++)
		free(self->allow_origin[i]);
	free(self->data_dir);
	for (int i = 0; i < self->n_output_root; i++)
		free(self->output_root[i]);
	free(self->files_root);
	free(self->record_out);
	memset(self, 0, sizeof(*self));
}
