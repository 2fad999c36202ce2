#include "server/http/auth.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/options.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define AUTH_TOKEN_MAX 512

/* A token that names a role: the agent's and the person's are kept in the
 * data dir when not given. */
struct credential {
	const char* what;	/* for messages: "the agent's token" */
	const char* file_name;	/* in the data dir */
	char* token;
	enum auth_token_source source;
	char* path;		/* the file the token is in, or NULL */
};

static struct {
	bool no_auth;
	struct credential agent, person;
	char* view_token;
} A;

bool auth_token_equal(const char* a, const char* b)
{
	size_t la = strlen(a), lb = strlen(b);
	/* Walk the presented string fully whatever the lengths are. */
	unsigned char diff = la != lb;
	for (size_t i = 0; i < la; i++)
		diff |= (unsigned char)a[i] ^ (unsigned char)(lb ? b[i % lb] : 0);
	return diff == 0;
}

/* Trim whitespace and check the token is printable and of sane length. */
static int clean_token(char* s, const char* what)
{
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '
			|| s[n - 1] == '\t'))
		s[--n] = '\0';
	size_t start = strspn(s, " \t");
	memmove(s, s + start, n - start + 1);
	n -= start;
	if (n == 0 || n >= AUTH_TOKEN_MAX) {
		log_error("%s: the token must be 1 to %d characters", what, AUTH_TOKEN_MAX - 1);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 127) {
			log_error("%s: the token must be printable ASCII without spaces", what);
			return -EINVAL;
		}
	return 0;
}

/* Read a token file. private: the file deskd keeps in its data dir, which
 * must be a regular file of ours that nobody else may read (never a symlink,
 * so nobody can plant a known token there or point it elsewhere). A
 * --token-file (e.g. a mounted secret, often a symlink) only gets a warning. */
static char* read_token_file(const char* path, bool private, int* err)
{
	struct stat st;
	int fd = private ? fs_open_private(path, &st) : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (!private && fd < 0)
		fd = -errno;
	if (!private && fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -EINVAL;
	}
	if (fd < 0) {
		*err = fd;
		if (fd == -ELOOP && private)
			log_error("%s is a symlink; deskd only uses a token file it owns: remove it "
					"and deskd makes a new one", path);
		else if (fd == -EINVAL)
			log_error("%s is not a regular file", path);
		else if (fd == -EPERM)
			log_error("%s must be ours and mode 0600 (it is uid %ld, mode %04o): others may "
					"have read the token; remove it and deskd makes a new one", path,
					(long)st.st_uid, (unsigned)st.st_mode & 07777);
		return NULL;
	}
	/* Group-readable is fine when the group is ours: a Kubernetes secret
	 * mounted with fsGroup and defaultMode 0440. */
	if (!private && ((st.st_mode & 007) || ((st.st_mode & 070) && st.st_gid != getegid())))
		log_warn("%s is readable by others (mode %04o); chmod 600 it", path,
				(unsigned)st.st_mode & 07777);
	char* buf = calloc(1, AUTH_TOKEN_MAX + 2);
	if (!buf) {
		close(fd);
		*err = -ENOMEM;
		return NULL;
	}
	ssize_t n = read(fd, buf, AUTH_TOKEN_MAX + 1);
	*err = n < 0 ? -errno : 0;
	close(fd);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The data dir holds the token: it must be a directory of ours that nobody
 * else may write, or someone could plant a token file (or a symlink) in it. */
static int check_data_dir(const char* path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		log_error("the data directory %s must be ours and not group/world writable "
				"(it is uid %ld, mode %04o); run chmod 700 %s or pick another with "
				"--data-dir", path, (long)st.st_uid, (unsigned)st.st_mode & 07777, path);
		return -EPERM;
	}
	return 0;
}

/* Generate 32 random bytes as hex and save them 0600 as c->file_name in the
 * data dir, or reuse the saved one. */
static int load_or_create(const char* data_dir, struct credential* c)
{
	char path[4096];
	int rc;
	if (snprintf(path, sizeof(path), "%s/%s", data_dir, c->file_name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if ((rc = fs_make_dir(data_dir)) < 0 || (rc = check_data_dir(data_dir)) < 0) {
		if (rc != -EPERM)
			log_error("cannot use the data directory %s: %s; pick another with --data-dir",
					data_dir, strerror(-rc));
		return rc;
	}
	if (!(c->path = strdup(path)))
		return -ENOMEM;
	c->source = AUTH_TOKEN_SAVED;
	c->token = read_token_file(path, true, &rc);
	if (c->token) {
		if (clean_token(c->token, path) < 0)
			return -EINVAL;
		return 0;
	}
	if (rc != -ENOENT) {
		if (rc != -ELOOP && rc != -EPERM && rc != -EINVAL)
			log_error("cannot read %s: %s", path, strerror(-rc));
		return rc;
	}

	unsigned char raw[32];
	size_t got = 0;
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	c->token = malloc(sizeof(raw) * 2 + 1);
	if (!c->token)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(c->token + 2 * i, 3, "%02x", raw[i]);

	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto write_failure;
	}
	size_t len = strlen(c->token);
	if (write(fd, c->token, len) != (ssize_t)len || write(fd, "\n", 1) != 1
			|| fsync(fd) < 0) {
		rc = errno ? -errno : -EIO;
		close(fd);
		unlink(tmp);
		goto write_failure;
	}
	close(fd);
	/* link() never replaces: a token written meanwhile by another deskd wins. */
	if (link(tmp, path) < 0) {
		rc = -errno;
		unlink(tmp);
		if (rc == -EEXIST) {
			free(c->token);
			c->token = read_token_file(path, true, &rc);
			if (!c->token)
				goto write_failure;
			return clean_token(c->token, path);
		}
		goto write_failure;
	}
	unlink(tmp);
	c->source = AUTH_TOKEN_GENERATED;
	log_info("generated %s, saved in %s", c->what, path);
	return 0;

write_failure:
	log_error("cannot save the token in %s: %s", path, strerror(-rc));
	return rc;
}

/* One credential from --X (given), --X-file or the data dir. */
static int load_credential(struct credential* c, const char* given, const char* given_name,
		const char* file, const char* file_name, const char* data_dir)
{
	int rc;
	if (given) {
		if (!(c->token = strdup(given)))
			return -ENOMEM;
		c->source = AUTH_TOKEN_GIVEN;
		return clean_token(c->token, given_name);
	}
	if (file) {
		c->source = AUTH_TOKEN_FILE;
		if (!(c->path = strdup(file)))
			return -ENOMEM;
		c->token = read_token_file(file, false, &rc);
		if (!c->token) {
			log_error("cannot read %s %s: %s", file_name, file, strerror(-rc));
			return rc ? rc : -EINVAL;
		}
		return clean_token(c->token, file);
	}
	return load_or_create(data_dir, c);
}

int auth_init(const struct options* opts)
{
	int rc = 0;
	memset(&A, 0, sizeof(A));
	A.agent = (struct credential){ .what = "the agent's token", .file_name = "token" };
	A.person = (struct credential){ .what = "the person's token", .file_name = "person-token" };
	if (opts->no_auth) {
		A.no_auth = true;
		log_warn("--no-auth: anyone who can reach %s may control this desktop",
				opts->listen);
		return 0;
	}
	if ((rc = load_credential(&A.agent, opts->token, "--token", opts->token_file,
			"--token-file", opts->data_dir)) < 0)
		goto token_failure;
	rc = load_credential(&A.person, opts->person_token, "--person-token",
			opts->person_token_file, "--person-token-file", opts->data_dir);
	/* An agent's token given with no data dir to keep a person's in (a
	 * read-only one): deskd serves the agent, and nobody can take control. */
	if (rc < 0 && !opts->person_token && !opts->person_token_file
			&& A.agent.source != AUTH_TOKEN_SAVED && A.agent.source != AUTH_TOKEN_GENERATED) {
		log_warn("no person's token (%s): the dashboard can watch but nobody can take "
				"control, pause or approve; give --person-token or --person-token-file",
				strerror(-rc));
		free(A.person.token);
		free(A.person.path);
		A.person.token = A.person.path = NULL;
		A.person.source = AUTH_TOKEN_NONE;
		rc = 0;
	}
	if (rc < 0)
		goto token_failure;
	if (A.person.token && auth_token_equal(A.person.token, A.agent.token)) {
		log_error("the person's token must differ from the agent's (--person-token, --token)");
		rc = -EINVAL;
		goto token_failure;
	}
	if (opts->view_token) {
		A.view_token = strdup(opts->view_token);
		if (!A.view_token) {
			rc = -ENOMEM;
			goto token_failure;
		}
		if ((rc = clean_token(A.view_token, "--view-token")) < 0)
			goto token_failure;
		if (auth_token_equal(A.view_token, A.agent.token)
				|| (A.person.token && auth_token_equal(A.view_token, A.person.token))) {
			log_error("--view-token must differ from the agent's and the person's tokens");
			rc = -EINVAL;
			goto token_failure;
		}
	}
	return 0;

token_failure:
	auth_deinit();
	return rc ? rc : -EINVAL;
}

void auth_deinit(void)
{
	free(A.agent.token);
	free(A.agent.path);
	free(A.person.token);
	free(A.person.path);
	free(A.view_token);
	memset(&A, 0, sizeof(A));
}

const char* auth_token(void)
{
	return A.no_auth ? NULL : A.agent.token;
}

enum auth_token_source auth_token_source(const char** path)
{
	if (path)
		*path = A.no_auth ? NULL : A.agent.path;
	return A.no_auth ? AUTH_TOKEN_NONE : A.agent.source;
}

const char* auth_person_token(void)
{
	return A.no_auth ? NULL : A.person.token;
}

enum auth_token_source auth_person_token_source(const char** path)
{
	if (path)
		*path = A.no_auth ? NULL : A.person.path;
	return A.no_auth ? AUTH_TOKEN_NONE : A.person.source;	/* NONE: no person's token */
}

enum http_role auth_check_token(const char* token)
{
	if (A.no_auth)
		return HTTP_ROLE_PERSON;
	if (!token || !A.agent.token)
		return HTTP_ROLE_NONE;
	/* Every compare always runs, so timing does not tell which one matched. */
	bool agent = auth_token_equal(token, A.agent.token);
	bool person = A.person.token && auth_token_equal(token, A.person.token);
	bool view = A.view_token && auth_token_equal(token, A.view_token);
	if (person)
		return HTTP_ROLE_PERSON;
	if (agent)
		return HTTP_ROLE_AGENT;
	if (view)
		return HTTP_ROLE_VIEW;
	return HTTP_ROLE_NONE;
}

const char* auth_role_name(enum http_role role)
{
	static const char* const names[] = {
		[HTTP_ROLE_NONE] = "none", [HTTP_ROLE_VIEW] = "view",
		[HTTP_ROLE_AGENT] = "agent", [HTTP_ROLE_PERSON] = "person",
	};
	return (unsigned)role < sizeof(names) / sizeof(names[0]) ? names[role] : "none";
}
