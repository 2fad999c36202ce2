/* The registry of recordings: every recorder deskd started, running or
 * finished, for the recording tools, status, MCP resources and REST
 * downloads (desktop/desktop.h).
 *
 * Each recording is a record/ recorder with its own thread and X connection.
 * It finalizes and publishes by itself when stopped, when its window is
 * destroyed or max_seconds pass; the registry keeps its final numbers. The
 * owner (an MCP session) that started a recording stops it when it ends;
 * deskd's shutdown stops and publishes all of them. */
#include "desktop/desktop_private.h"
#include "base/fs.h"
#include "base/log.h"
#include "record/record.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KEEP_FINISHED 256	/* finished recordings remembered for listing */
#define DEFAULT_MAX_SECONDS 3600

struct entry {
	struct entry* next;
	char id[48];
	uint32_t window;
	char* path;
	struct recorder* rec;
	const void* owner;	/* who started it, e.g. an MCP session (compared, never used) */
	int users;		/* record_stop calls waiting on it */
	bool collected;		/* a record_stop answered its result */
	bool joined;		/* its thread was joined; final is valid */
	struct record_stats final;
	int result;
	time_t started;
	int fps;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry* entries;	/* newest first */
static bool shutting_down;	/* no new recordings once shutdown began */

static void rec_log(void* ud, int level, const char* message)
{
	(void)ud;
	static const enum log_level map[] = { LOG_ERROR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	enum log_level l = level >= 0 && level <= 3 ? map[level] : LOG_DEBUG;
	if (log_enabled(l))
		log_write(l, __FILE__, __LINE__, "%s", message);
}

/* <data-dir>, canonical, or "" when it does not exist. */
static void data_dir(char* out, size_t size)
{
	const struct desktop_config* opts = desktop__config();
	char buf[PATH_MAX];
	out[0] = '\0';
	if (opts->data_dir && realpath(opts->data_dir, buf))
		snprintf(out, size, "%s", buf);
}

/* <data-dir>/recordings, made 0700 when missing; with create, the data dir
 * too (mkdir -p: a --data-dir that does not exist yet, when deskd was given
 * --token and so wrote no token file there). */
static int recordings_dir(char* out, size_t size, bool create)
{
	const struct desktop_config* opts = desktop__config();
	if (create && opts->data_dir) {
		int rc = fs_make_dir(opts->data_dir);
		if (rc < 0)
			return rc;
	}
	char dir[PATH_MAX];
	data_dir(dir, sizeof(dir));
	if (!dir[0])
		return -ENOENT;
	int n = snprintf(out, size, "%s/recordings", dir);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	if (mkdir(out, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct stat st;
	if (lstat(out, &st) < 0 || !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	return 0;
}

void desktop_recordings_init(void)
{
	record_set_log(rec_log, NULL);
	const struct desktop_config* opts = desktop__config();
	char rec_dir[PATH_MAX] = "", dd[PATH_MAX];
	if (recordings_dir(rec_dir, sizeof(rec_dir), false) < 0)
		rec_dir[0] = '\0';
	data_dir(dd, sizeof(dd));
	char** dirs = calloc((size_t)opts->n_output_root + 2, sizeof(*dirs));
	if (!dirs)
		return;	/* the staging stays until the next start */
	int n = 0;
	if (rec_dir[0])
		dirs[n++] = rec_dir;
	if (dd[0])
		dirs[n++] = dd;
	for (int i = 0; i < opts->n_output_root; i++)
		dirs[n++] = opts->output_root[i];
	safe_output_cleanup_stale(dirs, n);
	free(dirs);
}

/* Join recordings whose thread ended on its own (window destroyed,
 * max_seconds, error) and forget the oldest finished ones. Registry lock held. */
static void reap_locked(void)
{
	int kept = 0;
	struct entry** link = &entries;
	while (*link) {
		struct entry* e = *link;
		if (!e->joined && record_done(e->rec)) {
			e->result = record_stop(e->rec, &e->final);	/* instant: it ended */
			e->joined = true;
		}
		if (e->joined && e->users == 0 && ++kept > KEEP_FINISHED) {
			*link = e->next;
			record_destroy(e->rec);
			free(e->path);
			free(e);
			continue;
		}
		link = &e->next;
	}
}

static int running_locked(void)
{
	int n = 0;
	for (struct entry* e = entries; e; e = e->next)
		if (!e->joined && !record_done(e->rec))
			n++;
	return n;
}

static struct entry* find_locked(const char* id)
{
	for (struct entry* e = entries; e; e = e->next)
		if (strcmp(e->id, id) == 0)
			return e;
	return NULL;
}

static void make_id(char* out, size_t size)
{
	unsigned char r[3] = { 0 };
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r[0] = (unsigned char)ts.tv_nsec;
		r[1] = (unsigned char)(ts.tv_nsec >> 8);
		r[2] = (unsigned char)(ts.tv_nsec >> 16);
	}
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	snprintf(out, size, "rec-%04d%02d%02d-%02d%02d%02d-%02x%02x%02x",
			tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			tm.tm_min, tm.tm_sec, r[0], r[1], r[2]);
}

int desktop_recording_path(const char* id, char* path, size_t size)
{
	int rc = -ENOENT;
	if (!id)
		return rc;
	pthread_mutex_lock(&registry_lock);
	reap_locked();
	struct entry* e = find_locked(id);
	if (e && e->joined && e->final.state == RECORD_FINISHED) {
		int n = snprintf(path, size, "%s", e->path);
		rc = n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
	}
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

/* Delete only what this registry published: a regular file of ours at the
 * very path it wrote, in a directory reached without symlinks (a directory
 * swapped for a link would point the unlink elsewhere); the file itself is
 * checked with lstat and removed with unlinkat, so a symlink planted in its
 * place is refused and never followed. */
int desktop_recording_delete(const char* id, char* err, size_t err_size)
{
	int rc = -ENOENT;
	snprintf(err, err_size, "no recording with this id");
	if (!id)
		return rc;
	pthread_mutex_lock(&registry_lock);
	reap_locked();
	struct entry* e = find_locked(id);
	if (!e)
		goto done;
	if (!e->joined || e->users > 0) {
		rc = -EBUSY;
		snprintf(err, err_size, "%s is still recording; stop it first (record_stop)", id);
		goto done;
	}
	char dir[PATH_MAX], real[PATH_MAX];
	const char* slash = strrchr(e->path, '/');
	if (e->final.state == RECORD_FINISHED && slash && slash > e->path
			&& (size_t)(slash - e->path) < sizeof(dir)) {
		memcpy(dir, e->path, (size_t)(slash - e->path));
		dir[slash - e->path] = '\0';
		if (!realpath(dir, real) || strcmp(real, dir) != 0) {
			rc = -ELOOP;
			snprintf(err, err_size, "the recording's folder %s is not the one deskd "
					"wrote to (a symlink now, or gone); nothing was deleted", dir);
			goto done;
		}
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (dfd < 0) {
			rc = -errno;
			snprintf(err, err_size, "cannot open %s: %s", dir, strerror(errno));
			goto done;
		}
		if (fstatat(dfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			/* Gone already: forget it. */
			if (errno != ENOENT) {
				rc = -errno;
				snprintf(err, err_size, "cannot check %s: %s", e->path, strerror(errno));
				close(dfd);
				goto done;
			}
		} else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
			rc = -EPERM;
			snprintf(err, err_size, "%s is not the file deskd wrote (%s); nothing was "
					"deleted", e->path, S_ISLNK(st.st_mode) ? "a symlink" : "not a regular "
					"file of ours");
			close(dfd);
			goto done;
		} else if (unlinkat(dfd, slash + 1, 0) < 0) {
			rc = -errno;
			snprintf(err, err_size, "cannot delete %s: %s", e->path, strerror(errno));
			close(dfd);
			goto done;
		}
		close(dfd);
		log_info("deleted recording %s (%s)", id, e->path);
	}
	/* Failed or deleted: out of the list. */
	for (struct entry** link = &entries; *link; link = &(*link)->next) {
		if (*link != e)
			continue;
		*link = e->next;
		break;
	}
	record_destroy(e->rec);
	free(e->path);
	free(e);
	rc = 0;
	err[0] = '\0';
done:
	pthread_mutex_unlock(&registry_lock);
	return rc;
}

void desktop_recordings_end(char* const* ids, size_t n)
{
	pthread_mutex_lock(&registry_lock);
	for (size_t i = 0; i < n; i++) {
		struct entry* e = find_locked(ids[i]);
		if (!e)
			continue;
		e->owner = NULL;	/* the session's address may be reused */
		if (!e->joined) {
			log_info("session ended: finishing recording %s", e->id);
			record_request_stop(e->rec);	/* it publishes by itself */
		}
	}
	pthread_mutex_unlock(&registry_lock);
}

void desktop_recordings_shutdown(void)
{
	pthread_mutex_lock(&start_lock);	/* wait for a record_start in flight */
	shutting_down = true;
	pthread_mutex_unlock(&start_lock);
	pthread_mutex_lock(&registry_lock);
	for (struct entry* e = entries; e; e = e->next)
		if (!e->joined)
			record_request_stop(e->rec);	/* all finalize in parallel */
	for (struct entry* e = entries; e; e = e->next) {
		if (!e->joined) {
			e->result = record_stop(e->rec, &e->final);
			e->joined = true;
			if (e->result == 0)
				log_info("shutdown: recording %s published at %s (%llu frames)",
						e->id, e->path, e->final.frames);
			else
				log_error("shutdown: recording %s failed: %s", e->id, e->final.message);
		}
	}
	while (entries) {
		struct entry* e = entries;
		entries = e->next;
		if (e->users == 0) {	/* else a record_stop call still holds it */
			record_destroy(e->rec);
			free(e->path);
			free(e);
		}
	}
	pthread_mutex_unlock(&registry_lock);
}

/* The public copy of an entry. Registry lock held. */
static void info_locked(const struct entry* e, struct desktop_recording* out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->id, sizeof(out->id), "%s", e->id);
	snprintf(out->path, sizeof(out->path), "%s", e->path);
	out->window = e->window;
	out->fps = e->fps;
	out->started = e->started;
	out->result = e->joined ? e->result : 0;
	if (e->joined)
		out->stats = e->final;
	else
		record_get_stats(e->rec, &out->stats);
}

int desktop_recordings(struct desktop_recording** list, size_t* n)
{
	*list = NULL;
	*n = 0;
	pthread_mutex_lock(&registry_lock);
	reap_locked();
	size_t count = 0;
	for (struct entry* e = entries; e; e = e->next)
		count++;
	struct desktop_recording* out = calloc(count ? count : 1, sizeof(*out));
	if (!out) {
		pthread_mutex_unlock(&registry_lock);
		return -ENOMEM;
	}
	for (struct entry* e = entries; e; e = e->next)
		info_locked(e, &out[(*n)++]);
	pthread_mutex_unlock(&registry_lock);
	*list = out;
	return 0;
}

/* The message for a recorder that could not start. */
static void start_error(int rc, const char* why, const char* path, char* err,
		size_t err_size)
{
	switch (rc) {
	case -EINVAL:
		snprintf(err, err_size, "out: %s", why);
		break;
	case -EEXIST:
		snprintf(err, err_size,
				"%s already exists; deskd never replaces files: pick a new name", path);
		break;
	case -ENOENT:
	case -ECONNREFUSED:
	case -ENOTSUP:
	case -EMFILE:
		snprintf(err, err_size, "%s", why);
		break;
	default:
		snprintf(err, err_size, "cannot start recording: %s", why);
		break;
	}
}

int desktop_record_start(const struct desktop_record_params* p,
		struct desktop_recording* out, char* err, size_t err_size)
{
	const struct desktop_config* opts = desktop__config();
	char id[48], path[PATH_MAX + 64], dd[PATH_MAX], why[512] = "";

	make_id(id, sizeof(id));
	data_dir(dd, sizeof(dd));
	char* def_roots[1] = { dd };
	char* const* roots = def_roots;
	int n_roots = 1;
	if (p->out) {
		snprintf(path, sizeof(path), "%s", p->out);
		if (opts->n_output_root > 0) {
			roots = opts->output_root;
			n_roots = opts->n_output_root;
		}
	} else {
		char dir[PATH_MAX];
		int rc = recordings_dir(dir, sizeof(dir), true);
		if (rc < 0) {
			snprintf(err, err_size,
					"cannot create the recordings folder in the data dir: %s; give out",
					strerror(-rc));
			return rc == -ENOSPC || rc == -EDQUOT ? rc : -EIO;
		}
		data_dir(dd, sizeof(dd));	/* it may have been made just now */
		int n = snprintf(path, sizeof(path), "%.4000s/%.47s.mp4", dir, id);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			snprintf(err, err_size, "the data dir path is too long; give out");
			return -ENAMETOOLONG;
		}
	}

	pthread_mutex_lock(&start_lock);
	if (shutting_down) {
		pthread_mutex_unlock(&start_lock);
		snprintf(err, err_size, "deskd is shutting down");
		return -ESHUTDOWN;
	}
	pthread_mutex_lock(&registry_lock);
	reap_locked();
	int running = running_locked();
	pthread_mutex_unlock(&registry_lock);
	int cap = opts->max_recordings > 0 ? opts->max_recordings : 4;
	if (running >= cap) {
		pthread_mutex_unlock(&start_lock);
		snprintf(err, err_size,
				"%d recording(s) already running, the limit (--max-recordings); stop one with record_stop",
				running);
		return -EMFILE;
	}

	struct entry* e = calloc(1, sizeof(*e));
	if (!e || !(e->path = strdup(path))) {
		pthread_mutex_unlock(&start_lock);
		free(e);
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	struct record_params params = {
		.display = desktop_display_name(),
		.window = p->window,
		.path = path,
		.roots = roots,
		.n_roots = n_roots,
		.fps = p->fps,
		.max_seconds = p->max_seconds,
		.cursor = p->cursor,
	};
	int rc = record_start(&params, &e->rec, why, sizeof(why));
	if (rc < 0) {
		pthread_mutex_unlock(&start_lock);
		free(e->path);
		free(e);
		start_error(rc, why[0] ? why : strerror(-rc), path, err, err_size);
		return rc;
	}
	snprintf(e->id, sizeof(e->id), "%s", id);
	e->window = p->window;
	e->owner = p->owner;
	e->started = time(NULL);
	e->fps = p->fps;
	pthread_mutex_lock(&registry_lock);
	e->next = entries;
	entries = e;
	info_locked(e, out);
	pthread_mutex_unlock(&registry_lock);
	pthread_mutex_unlock(&start_lock);
	return 0;
}

int desktop_record_stop(const char* id, const void* owner,
		struct desktop_recording* out, int* n_running)
{
	struct entry* e = NULL;
	*n_running = 0;
	pthread_mutex_lock(&registry_lock);
	reap_locked();
	if (id) {
		e = find_locked(id);
		if (!e) {
			pthread_mutex_unlock(&registry_lock);
			return -ENOENT;
		}
	} else {
		/* The owner's only recording: running ones first, then one that
		 * ended by itself and was never reported. */
		struct entry* running = NULL;
		struct entry* done = NULL;
		for (struct entry* x = entries; x; x = x->next) {
			if (x->owner != owner || x->collected)
				continue;
			if (!x->joined) {
				(*n_running)++;
				running = x;
			} else if (!done) {
				done = x;
			}
		}
		if (*n_running > 1) {
			pthread_mutex_unlock(&registry_lock);
			return -EBUSY;
		}
		e = running ? running : done;
		if (!e) {
			pthread_mutex_unlock(&registry_lock);
			return -ESRCH;
		}
	}
	e->users++;
	pthread_mutex_unlock(&registry_lock);

	/* Flush, trailer, publish: up to a second or so; outside the lock. */
	struct record_stats s;
	int rc = record_stop(e->rec, &s);

	pthread_mutex_lock(&registry_lock);
	if (!e->joined) {
		e->final = s;
		e->result = rc;
		e->joined = true;
	}
	e->collected = true;
	e->users--;
	info_locked(e, out);
	out->stats = s;
	out->result = rc;
	pthread_mutex_unlock(&registry_lock);
	return 0;
}
