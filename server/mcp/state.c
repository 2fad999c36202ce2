#define _GNU_SOURCE
/* requestState for the stateless era (core.h): what a server needs back when
 * the client retries a request after an input-required result travels
 * through the client, so the client must not be able to forge, alter,
 * replay or move it to another request.
 *
 *   token   = base64(payload) "." base64(HMAC-SHA-256(key, base64(payload)))
 *   payload = {"v":1,"m":method,"t":target,"d":sha256(canonical args),
 *              "p":principal,"e":expiry (monotonic ms),"n":nonce,"s":state}
 *
 * The key (32 bytes from getrandom) lives only in this process, so tokens
 * die with it and the monotonic clock is the right one for the expiry. A
 * token is consumed when it is opened: its nonce is remembered until it
 * expires, so a replay is refused even within its lifetime (nothing a
 * token leads to runs twice). The remembered nonces are bounded; when the
 * set is full, new tokens are refused (fail closed) rather than old ones
 * forgotten. */

#include "server/mcp/core.h"
#include "base/base64.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/sha256.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define STATE_TTL_MS (10 * 60 * 1000)	/* tests: DESKD_MCP_STATE_TTL_MS */
#define STATE_MAX_USED 65536
#define STATE_MAX_TOKEN (1u << 20)
#define NONCE_BYTES 16

static struct {
	pthread_once_t once;
	pthread_mutex_t mutex;
	uint8_t key[32];
	int64_t ttl_ms;
	/* Consumed nonces with their expiry, unordered. */
	struct used {
		uint8_t nonce[NONCE_BYTES];
		int64_t expires;
	}* used;
	size_t n_used, cap_used;
} S = { .once = PTHREAD_ONCE_INIT, .mutex = PTHREAD_MUTEX_INITIALIZER };

static void random_bytes(void* out, size_t n)
{
	uint8_t* p = out;
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			log_panic("getrandom failed: %s", strerror(errno));
		}
		got += (size_t)r;
	}
}

static void state_init(void)
{
	random_bytes(S.key, sizeof(S.key));
	S.ttl_ms = STATE_TTL_MS;
	const char* knob = getenv("DESKD_MCP_STATE_TTL_MS");
	if (knob && atoll(knob) > 0)
		S.ttl_ms = atoll(knob);
}

static void hexify(const uint8_t* b, size_t n, char* out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

/* SHA-256 of the canonical JSON of args (sorted keys, compact) as hex. */
static int args_digest(json_t* args, char out[2 * SHA256_SIZE + 1])
{
	char* text = args ? json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)
			: strdup("{}");
	if (!text)
		return -ENOMEM;
	uint8_t d[SHA256_SIZE];
	sha256(text, strlen(text), d);
	free(text);
	hexify(d, sizeof(d), out);
	return 0;
}

static void tag(const char* data, size_t len, uint8_t out[SHA256_SIZE])
{
	hmac_sha256(S.key, sizeof(S.key), data, len, out);
}

char* mcp_state_seal(json_t* state, const char* method, const char* target,
		json_t* args, const char* principal)
{
	pthread_once(&S.once, state_init);
	char digest[2 * SHA256_SIZE + 1];
	uint8_t nonce[NONCE_BYTES];
	char nonce_hex[2 * NONCE_BYTES + 1];
	if (args_digest(args, digest) < 0)
		return NULL;
	random_bytes(nonce, sizeof(nonce));
	hexify(nonce, sizeof(nonce), nonce_hex);
	json_t* payload = json_pack("{s:i, s:s, s:s, s:s, s:s, s:I, s:s, s:O}",
			"v", 1, "m", method, "t", target ? target : "", "d", digest,
			"p", principal ? principal : "", "e", (json_int_t)(clock_ms() + S.ttl_ms),
			"n", nonce_hex, "s", state ? state : json_null());
	char* text = payload ? json_dumps(payload, JSON_COMPACT) : NULL;
	json_decref(payload);
	if (!text)
		return NULL;
	size_t blen;
	char* body = base64_encode(text, strlen(text), &blen);
	free(text);
	if (!body)
		return NULL;
	uint8_t mac[SHA256_SIZE];
	tag(body, blen, mac);
	char* mac64 = base64_encode(mac, sizeof(mac), NULL);
	char* token = NULL;
	if (mac64 && asprintf(&token, "%s.%s", body, mac64) < 0)
		token = NULL;
	free(mac64);
	free(body);
	return token;
}

static int unhex_nonce(const char* s, uint8_t out[NONCE_BYTES])
{
	if (!s || strlen(s) != 2 * NONCE_BYTES)
		return -1;
	for (int i = 0; i < NONCE_BYTES; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

/* Remember nonce until expires; -EALREADY when it was used, -ENOSPC when
 * the set is full. */
static int consume(const uint8_t nonce[NONCE_BYTES], int64_t expires)
{
	int64_t now = clock_ms();
	int rc = 0;
	pthread_mutex_lock(&S.mutex);
	for (size_t i = 0; i < S.n_used; ) {
		if (S.used[i].expires <= now) {
			S.used[i] = S.used[--S.n_used];
			continue;
		}
		if (memcmp(S.used[i].nonce, nonce, NONCE_BYTES) == 0) {
			rc = -EALREADY;
			goto out;
		}
		i++;
	}
	if (S.n_used == S.cap_used) {
		size_t cap = S.cap_used ? S.cap_used * 2 : 64;
		struct used* p = cap <= STATE_MAX_USED ? realloc(S.used, cap * sizeof(*p)) : NULL;
		if (!p) {
			rc = -ENOSPC;
			goto out;
		}
		S.used = p;
		S.cap_used = cap;
	}
	memcpy(S.used[S.n_used].nonce, nonce, NONCE_BYTES);
	S.used[S.n_used].expires = expires;
	S.n_used++;
out:
	pthread_mutex_unlock(&S.mutex);
	return rc;
}

static json_t* refuse(char* why, size_t size, const char* reason)
{
	snprintf(why, size, "%s", reason);
	return NULL;
}

json_t* mcp_state_open(const char* token, const char* method, const char* target,
		json_t* args, const char* principal, char* why, size_t why_size)
{
	pthread_once(&S.once, state_init);
	size_t len = token ? strlen(token) : 0;
	const char* dot = token ? strchr(token, '.') : NULL;
	if (!dot || len > STATE_MAX_TOKEN)
		return refuse(why, why_size, "requestState is not one this server issued");
	size_t blen = (size_t)(dot - token);
	uint8_t mac[SHA256_SIZE];
	size_t mac_len = 0;
	uint8_t* got = base64_decode(dot + 1, len - blen - 1, &mac_len);
	tag(token, blen, mac);
	bool ok = got && mac_len == SHA256_SIZE && sha256_equal(got, mac, SHA256_SIZE);
	free(got);
	if (!ok)
		return refuse(why, why_size, "requestState failed its integrity check "
				"(tampered, or issued by another deskd process)");
	size_t plen;
	char* text = base64_decode(token, blen, &plen);
	json_error_t jerr;
	json_t* payload = text ? json_loadb(text, plen, 0, &jerr) : NULL;
	free(text);
	json_t* result = NULL;
	char digest[2 * SHA256_SIZE + 1];
	const char* pm = json_string_value(json_object_get(payload, "m"));
	const char* pt = json_string_value(json_object_get(payload, "t"));
	const char* pd = json_string_value(json_object_get(payload, "d"));
	const char* pp = json_string_value(json_object_get(payload, "p"));
	json_t* pe = json_object_get(payload, "e");
	uint8_t nonce[NONCE_BYTES];
	if (!json_is_object(payload) || json_integer_value(json_object_get(payload, "v")) != 1
			|| !pm || !pt || !pd || !pp || !json_is_integer(pe)
			|| unhex_nonce(json_string_value(json_object_get(payload, "n")), nonce) < 0) {
		refuse(why, why_size, "requestState is malformed");
	} else if (json_integer_value(pe) <= clock_ms()) {
		refuse(why, why_size, "requestState expired; call again without it to start over");
	} else if (strcmp(pm, method) != 0 || strcmp(pt, target ? target : "") != 0) {
		refuse(why, why_size, "requestState belongs to another request (method or name differ)");
	} else if (args_digest(args, digest) < 0 || strcmp(pd, digest) != 0) {
		refuse(why, why_size, "requestState belongs to another request (the arguments differ)");
	} else if (strcmp(pp, principal ? principal : "") != 0) {
		refuse(why, why_size, "requestState was issued to another caller");
	} else {
		int rc = consume(nonce, json_integer_value(pe));
		if (rc == -EALREADY)
			refuse(why, why_size, "requestState was already used; each one answers "
					"one retry");
		else if (rc < 0)
			refuse(why, why_size, "too many requestStates in flight; retry later");
		else
			result = json_incref(json_object_get(payload, "s"));
	}
	json_decref(payload);
	return result;
}
