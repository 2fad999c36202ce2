/* deskd: a computer-use server for Linux/X11. */

#include "server/http/auth.h"
#include "desktop/desktop.h"
#include "server/desktop_config.h"
#include "server/doctor.h"
#include "server/gnome_cli.h"
#include "base/events.h"
#include "server/http/http.h"
#include "server/live.h"
#include "base/jsonmem.h"
#include "base/log.h"
#include "server/mcp/mcp.h"
#include "base/options.h"
#include "server/record_cli.h"
#include "server/rest.h"
#include "server/status.h"
#include "tools/tools.h"
#include "server/http/web.h"
#include "base/worker.h"
#include "server/http/ws.h"

#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef DESKD_VERSION
#define DESKD_VERSION "0.0.0"
#endif

static int write_ready_file(const char* path, const char* url)
{
	char tmp[4096];
	int n = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	/* The name is predictable: never follow or reuse what is there (a
	 * symlink planted in a shared directory would make us write through it). */
	unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	FILE* f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -errno;
	}
	fprintf(f, "{\"url\":\"%s\",\"mcp\":\"%s/mcp\",\"pid\":%ld,\"display\":\"%s\"}\n",
			url, url, (long)getpid(), desktop_display_name());
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		int err = -errno;
		unlink(tmp);
		return err;
	}
	return 0;
}

/* The command that prints a file from outside: deskd's own container (or
 * pod) when it runs in one, else NULL. */
static const char* container_exec(void)
{
	if (getenv("KUBERNETES_SERVICE_HOST"))
		return "kubectl exec <pod> --";
	if (access("/run/.containerenv", F_OK) == 0)
		return "podman exec <container>";
	/* Images made from a docker container keep /.dockerenv: only trust it
	 * when deskd is the container's init. */
	if (getpid() == 1 && access("/.dockerenv", F_OK) == 0)
		return "docker exec <container>";
	return NULL;
}

/* What the banner says of one token: printed only when this run generated
 * it (the first start with a fresh data dir); a token that was given, or
 * kept from an earlier run, may be printed into a log that others read (a
 * container's), so then it says where the token is and how to read it. */
struct banner_token {
	const char* token;	/* NULL: --no-auth */
	const char* path;	/* the file it is in, or NULL */
	enum auth_token_source source;
	bool printed;
	char shown[600];	/* the token, or "<placeholder>" */
	char shell[4200];	/* the token, or $(cat FILE), for a pasted line */
};

static void banner_token_init(struct banner_token* t, const char* token,
		enum auth_token_source source, const char* path, const char* placeholder,
		const char* exec)
{
	t->token = token;
	t->path = path;
	t->source = source;
	t->printed = token && source == AUTH_TOKEN_GENERATED;
	snprintf(t->shown, sizeof(t->shown), "%s", t->printed ? token : placeholder);
	if (t->printed)
		snprintf(t->shell, sizeof(t->shell), "%s", token);
	else if (token && path)
		snprintf(t->shell, sizeof(t->shell), "$(%s%scat %s)", exec ? exec : "",
				exec ? " " : "", path);
	else
		snprintf(t->shell, sizeof(t->shell), "%s", placeholder);
}

static void banner_token_print(const struct banner_token* t, const char* label,
		const char* given_flag, const char* exec)
{
	if (!t->token) {
		fprintf(stderr, "  %-10s none: nobody can take control or approve (give %s)\n",
				label, given_flag);
	} else if (t->printed) {
		fprintf(stderr, "  %-10s generated now, saved in %s\n", label, t->path);
	} else if (t->path) {
		fprintf(stderr, "  %-10s not printed; it is in %s (%s)\n", label, t->path,
				t->source == AUTH_TOKEN_FILE ? "given as a file" : "kept from an earlier run");
		fprintf(stderr, "             read it with: cat %s\n", t->path);
		if (exec)
			fprintf(stderr, "             from outside: %s cat %s\n", exec, t->path);
	} else {
		fprintf(stderr, "  %-10s not printed; the one given with %s\n", label, given_flag);
	}
}

/* --log-format json: the banner is one log event, so that every line on
 * stderr is JSON; the same content as the text banner, as members. */
static const char* embedded_label(void)
{
	if (!desktop_is_embedded())
		return "";
	if (desktop_is_gnome())
		return desktop_gnome_shell() ? " (embedded GNOME Shell)" : " (embedded Mutter)";
	return desktop_is_wayland() ? " (embedded sway)" : " (embedded Xvfb)";
}

static void banner_event(const char* url, const struct banner_token* agent,
		const struct banner_token* person)
{
	char dashboard[900], mcp[300], claude[4800];
	snprintf(dashboard, sizeof(dashboard), "%s/%s%s", url, person->token ? "#token=" : "",
			person->token ? person->shown : "");
	snprintf(mcp, sizeof(mcp), "%s/mcp", url);
	if (agent->token)
		snprintf(claude, sizeof(claude), "claude mcp add --transport http deskd %s/mcp"
				" --header \"Authorization: Bearer %s\"", url, agent->shell);
	else
		snprintf(claude, sizeof(claude), "claude mcp add --transport http deskd %s/mcp",
				url);
	bool embedded = desktop_is_embedded();
	bool auth = agent->token != NULL;
	const struct log_field fields[] = {
		{ "event", "ready", false },
		{ "version", DESKD_VERSION, false },
		{ "display", desktop_display_name(), false },
		{ "embedded", embedded ? "true" : "false", true },
		{ "backend", desktop_backend(), false },
		{ "url", url, false },
		{ "dashboard", dashboard, false },
		{ "mcp", mcp, false },
		{ "auth", auth ? "true" : "false", true },
		{ "token_printed", auth ? (agent->printed ? "true" : "false") : NULL, true },
		{ "token_file", auth ? agent->path : NULL, false },
		{ "person_token_printed", auth ? (person->printed ? "true" : "false") : NULL, true },
		{ "person_token_file", auth ? person->path : NULL, false },
		{ "claude_mcp_add", claude, false },
	};
	log_event(LOG_INFO, __FILE__, __LINE__, fields, sizeof(fields) / sizeof(fields[0]),
			"deskd %s on display %s%s: dashboard %s/, MCP %s", DESKD_VERSION,
			desktop_display_name(), embedded_label(), url, mcp);
}

/* The dashboard URL carries the person's token, the MCP line the agent's:
 * an agent given its line cannot take control or approve its own calls. */
static void print_banner(const char* url, const struct options* opts)
{
	const char* exec = container_exec();
	const char* path = NULL;
	struct banner_token agent, person;
	enum auth_token_source source = auth_token_source(&path);
	banner_token_init(&agent, auth_token(), source, path, "<token>", exec);
	source = auth_person_token_source(&path);
	banner_token_init(&person, auth_person_token(), source, path, "<person-token>", exec);
	if (log_is_json()) {
		banner_event(url, &agent, &person);
		return;
	}
	fprintf(stderr, "\n  deskd %s on display %s%s\n", DESKD_VERSION,
			desktop_display_name(), embedded_label());
	if (!agent.token) {
		fprintf(stderr, "  Dashboard: %s/\n", url);
		fprintf(stderr, "  MCP:       %s/mcp  (no auth)\n", url);
		fprintf(stderr, "  Add to Claude Code:\n    claude mcp add --transport http deskd %s/mcp\n",
				url);
	} else {
		fprintf(stderr, "  Dashboard: %s/#token=%s   (the person's: control, approvals)\n",
				url, person.shown);
		fprintf(stderr, "  MCP:       %s/mcp   (the agent's token)\n", url);
		banner_token_print(&agent, "Token:", "--token (or DESKD_TOKEN)", exec);
		banner_token_print(&person, "Person:", "--person-token (or DESKD_PERSON_TOKEN)", exec);
		fprintf(stderr, "  Add to Claude Code:\n    claude mcp add --transport http deskd %s/mcp"
				" --header \"Authorization: Bearer %s\"\n", url, agent.shell);
	}
	bool any = opts->listen_host && (strcmp(opts->listen_host, "0.0.0.0") == 0
			|| strcmp(opts->listen_host, "::") == 0);
	const char* port = strrchr(url, ':');
	if (any && exec)
		fprintf(stderr, "  These are the container's own addresses: from outside use the address and\n"
				"  port published for its port %s (podman port, docker port, a Service).\n",
				port ? port + 1 : "?");
	else if (any)
		fprintf(stderr, "  Listening on all interfaces: from other machines use this machine's address.\n");
	fputc('\n', stderr);
}

static int serve(struct options* opts)
{
	int rc = 1;
	bool http = !opts->stdio || opts->listen_given;
	char url[256] = "";

	/* Client JSON is parsed within a budget; the heap goes back after spikes. */
	jsonmem_init((size_t)opts->max_json_memory);

	/* Fixtures first: the conformance suite looks for them on page one. */
	if (opts->conformance_fixtures) {
		tools_add(mcp_fixture_tools);
		tools_add(mcp_fixture_mrtr_tools);
		mcp_catalog_add(&mcp_fixture_catalog);
		mcp_catalog_add(&mcp_fixture_mrtr_catalog);
	}
	tools_add(status_tools);
	mcp_catalog_add(&mcp_deskd_catalog);
	if (events_init() < 0 || tools_init() < 0)
		return 1;
	if (auth_init(opts) < 0)
		goto auth_failure;
	struct desktop_config desktop;
	server_desktop_config(opts, &desktop);
	desktop_configure(&desktop);
	if (desktop_start() < 0) {
		log_error("no display: give --display :N, or install Xvfb for the embedded one (deskd doctor tells more)");
		goto desktop_failure;
	}
	desktop_recordings_init();	/* removes staging left by a crash */
	if (http) {
		if (rest_register() < 0 || mcp_http_register() < 0
				|| web_register() < 0 || live_init() < 0)
			goto http_failure;
		if (ws_start(opts, live_protocols()) < 0)
			goto http_failure;
		if (http_start(opts, url, sizeof(url)) < 0) {
			log_error("cannot listen on %s; pick another with --listen ADDR:PORT (port 0 picks a free one)",
					opts->listen);
			goto listen_failure;
		}
		print_banner(url, opts);
	}
	if (opts->stdio && mcp_stdio_start() < 0)
		goto stdio_failure;
	if (opts->ready_file && write_ready_file(opts->ready_file, url) < 0)
		log_warn("cannot write the ready file %s", opts->ready_file);

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	int sig = 0;
	sigwait(&set, &sig);
	log_info("%s: shutting down", strsignal(sig));
	rc = 0;
	if (http)
		rest_shutdown();	/* long REST calls end now, as sessions' do below */
	desktop_recordings_shutdown();	/* recordings end now, published while the display lives */

	if (opts->stdio)
		mcp_stdio_stop();
stdio_failure:
	mcp_shutdown();
	if (http)
		http_stop();
listen_failure:
	if (http)
		ws_stop();
http_failure:
	if (http)
		live_deinit();
	worker_drain(5000);
	desktop_stop();
desktop_failure:
	auth_deinit();
auth_failure:
	tools_deinit();
	events_deinit();
	return rc;
}

/* A crash leaves its stack on stderr (the log), so that a failure seen once
 * on another machine can be read afterwards (addr2line -e deskd ADDRESS).
 * Only what is async-signal-safe; then the default action (a core, if
 * enabled). Sanitizer builds keep their own, better, reports. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_UNDEFINED__)
static void on_crash(int sig)
{
	static const char head[] = "deskd: crashed; the stack (addr2line -e deskd ADDRESS):\n";
	ssize_t unused = write(STDERR_FILENO, head, sizeof(head) - 1);
	(void)unused;
	void* frames[64];
	int n = backtrace(frames, 64);
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
	signal(sig, SIG_DFL);
	raise(sig);
}
#endif

static void crash_handlers(void)
{
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_UNDEFINED__)
	void* warm[1];
	backtrace(warm, 1);	/* loads libgcc now, not inside the handler */
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_crash);
#endif
}

int main(int argc, char* argv[])
{
	crash_handlers();
	struct options opts;
	char err[512];

	/* Before any thread starts: signals go to sigwait in main only. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (options_parse(&opts, argc, argv, err, sizeof(err)) < 0) {
		fprintf(stderr, "deskd: %s\n", err);
		options_deinit(&opts);
		return 2;
	}
	options_set_global(&opts);
	log_init((enum log_level)opts.log_level, opts.log_json);

	int rc;
	switch (opts.mode) {
	case OPTIONS_HELP:
		options_print_help(stdout);
		rc = 0;
		break;
	case OPTIONS_MAN:
		options_print_man(stdout, DESKD_VERSION);
		rc = 0;
		break;
	case OPTIONS_VERSION:
		printf("deskd %s\n", DESKD_VERSION);
		rc = 0;
		break;
	case OPTIONS_DOCTOR:
		rc = doctor_main(&opts);
		break;
	case OPTIONS_RECORD:
		rc = record_cli_main(&opts);
		break;
	case OPTIONS_GNOME_EXTENSION:
		rc = gnome_cli_main(&opts);
		break;
	default:
		rc = serve(&opts);
		break;
	}
	options_deinit(&opts);
	return rc;
}
