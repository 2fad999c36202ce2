/* The accessibility ref registry (tools/refs.h): a hash of the elements
 * given out, by bus name and object path, and an array by number for the
 * lookups and the oldest-first eviction. */
#include "tools/refs.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define REF_BUCKETS 4096

struct ref_entry {
	struct ref ref;
	struct ref_entry* next;	/* hash chain */
};

static pthread_mutex_t refs_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct ref_entry* buckets[REF_BUCKETS];
static struct ref_entry** by_num;	/* by_num[num], NULL when evicted */
static unsigned by_num_cap;
static unsigned next_num = 1, oldest = 1;
static size_t live;

void refs_lock(void)
{
	pthread_mutex_lock(&refs_mutex);
}

void refs_unlock(void)
{
	pthread_mutex_unlock(&refs_mutex);
}

static unsigned id_hash(const struct a11y_id* id)
{
	unsigned h = 2166136261u;
	for (const char* s = id->bus; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	for (const char* s = id->path; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % REF_BUCKETS;
}

static bool same_id(const struct a11y_id* a, const struct a11y_id* b)
{
	return strcmp(a->bus, b->bus) == 0 && strcmp(a->path, b->path) == 0;
}

static void entry_link(struct ref_entry* e)
{
	unsigned h = id_hash(&e->ref.id);
	e->next = buckets[h];
	buckets[h] = e;
}

static void entry_unlink(struct ref_entry* e)
{
	struct ref_entry** p = &buckets[id_hash(&e->ref.id)];
	while (*p && *p != e)
		p = &(*p)->next;
	if (*p)
		*p = e->next;
}

static void entry_free(struct ref_entry* e)
{
	ref_clear(&e->ref);
	free(e);
}

/* Unlinked, unnumbered and freed. */
static void entry_forget(struct ref_entry* e)
{
	entry_unlink(e);
	by_num[e->ref.num] = NULL;
	entry_free(e);
	live--;
}

/* Replace *field by a copy of value when it differs; kept as it was when
 * out of memory. */
static void update_string(char** field, const char* value)
{
	if (strcmp(*field, value) == 0)
		return;
	char* copy = strdup(value);
	if (copy) {
		free(*field);
		*field = copy;
	}
}

/* Room for number next_num in by_num. */
static bool by_num_grow(void)
{
	if (next_num < by_num_cap)
		return true;
	unsigned cap = by_num_cap ? by_num_cap * 2 : 1024;
	struct ref_entry** v = realloc(by_num, cap * sizeof(*v));
	if (!v)
		return false;
	memset(v + by_num_cap, 0, (cap - by_num_cap) * sizeof(*v));
	by_num = v;
	by_num_cap = cap;
	return true;
}

unsigned refs_number_locked(const struct a11y_id* id, uint32_t window, int pid, int role,
		const char* name, const char* locator)
{
	for (struct ref_entry* e = buckets[id_hash(id)]; e; e = e->next) {
		if (same_id(&e->ref.id, id)) {
			update_string(&e->ref.name, name);
			if (locator)
				update_string(&e->ref.locator, locator);
			e->ref.role = role;
			e->ref.window = window;
			return e->ref.num;
		}
	}
	if (!by_num_grow())
		return 0;
	struct ref_entry* e = calloc(1, sizeof(*e));
	if (!e)
		return 0;
	e->ref.name = strdup(name);
	e->ref.locator = strdup(locator ? locator : "");
	if (!e->ref.name || !e->ref.locator) {
		entry_free(e);
		return 0;
	}
	e->ref.num = next_num++;
	e->ref.id = *id;
	e->ref.window = window;
	e->ref.pid = pid;
	e->ref.role = role;
	entry_link(e);
	by_num[e->ref.num] = e;
	live++;
	/* Oldest first out (a long session over many apps). */
	while (live > REFS_MAX && oldest < next_num) {
		if (by_num[oldest])
			entry_forget(by_num[oldest]);
		oldest++;
	}
	return e->ref.num;
}

bool refs_get(unsigned num, struct ref* out)
{
	pthread_mutex_lock(&refs_mutex);
	struct ref_entry* e = num < by_num_cap ? by_num[num] : NULL;
	if (e) {
		*out = e->ref;
		out->name = strdup(e->ref.name);
		out->locator = strdup(e->ref.locator);
	}
	pthread_mutex_unlock(&refs_mutex);
	if (e && (!out->name || !out->locator)) {
		ref_clear(out);
		return false;
	}
	return e != NULL;
}

void refs_move(unsigned num, const struct a11y_id* id)
{
	pthread_mutex_lock(&refs_mutex);
	struct ref_entry* e = num < by_num_cap ? by_num[num] : NULL;
	if (e) {
		for (struct ref_entry* o = buckets[id_hash(id)]; o; o = o->next)
			if (o != e && same_id(&o->ref.id, id)) {
				entry_forget(o);
				break;
			}
		entry_unlink(e);
		e->ref.id = *id;
		entry_link(e);
	}
	pthread_mutex_unlock(&refs_mutex);
}

unsigned refs_parse(const char* s)
{
	if (!s || s[0] != 'e' || !isdigit((unsigned char)s[1]))
		return 0;
	char* end;
	unsigned long v = strtoul(s + 1, &end, 10);
	return *end || v == 0 || v > 0xffffffffUL ? 0 : (unsigned)v;
}

void ref_clear(struct ref* r)
{
	free(r->name);
	free(r->locator);
	r->name = r->locator = NULL;
}
