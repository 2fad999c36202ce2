/* The clipboard on a GNOME desktop: the RemoteDesktop session's own
 * (EnableClipboard, SetSelection, SelectionRead; gnome/gnome.h), the third
 * implementation of desktop.h's clipboard calls (clipboard.c hands over by
 * the backend). One session for the process, made at the first use and
 * again when Mutter closed it; the session's reader thread answers the
 * apps' transfers, so nothing here serves.
 *
 * Text only: Mutter's RemoteDesktop clipboard carries any MIME type, but
 * deskd offers and reads text there for now (an image answers -ENOTSUP);
 * there is no PRIMARY. A paste's requestor is unknown (no window ids), so
 * a delivery counts for any window. Private to desktop/. */
#include "desktop/desktop_private.h"
#include "gnome/gnome.h"
#include "base/clock.h"
#include "base/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPEN_TIMEOUT_MS 3000
#define DELIVERY_POLL_MS 5
/* A paste is taken when the transfers after the first have been quiet this
 * long (Chromium reads a paste twice: 2 ms apart, 113 ms at most under
 * load, measured on Mutter 48; a read after deskd put the old text back got
 * the old text), and at most this long after the first. */
#define DELIVERY_QUIET_MS 150
#define DELIVERY_QUIET_MAX_MS 1000

static struct {
	pthread_mutex_t lock;	/* guards session and owned */
	struct gnome* session;
	bool owned;		/* deskd's offer is the clipboard's content */
	unsigned long served_base;	/* deliveries by sessions closed before */
} G = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The session, made again when Mutter closed it. Lock held. */
static int ensure(char* err, size_t err_size)
{
	if (G.session && gnome_alive(G.session))
		return 0;
	if (G.session) {
		G.served_base += gnome_clipboard_delivered(G.session);
		gnome_close(G.session);
		G.session = NULL;
		G.owned = false;
	}
	G.session = gnome_open(desktop_display_name(), GNOME_CLIPBOARD, OPEN_TIMEOUT_MS, err,
			err_size);
	return G.session ? 0 : -ECONNRESET;
}

static int refused(enum desktop_selection sel, bool image, char* err, size_t err_size)
{
	if (sel == DESKTOP_PRIMARY)
		snprintf(err, err_size, "the PRIMARY selection is not offered on GNOME desktops; "
				"use the clipboard");
	else
		snprintf(err, err_size, "the clipboard on GNOME carries text only in this deskd");
	return -ENOTSUP;
}

int desktop__gnome_clipboard_write(enum desktop_selection sel, const void* data, size_t len,
		bool image, char* err, size_t err_size)
{
	if (sel == DESKTOP_PRIMARY || image)
		return refused(sel, image, err, err_size);
	if (len > DESKTOP_CLIPBOARD_MAX) {
		snprintf(err, err_size, "%zu bytes is over the clipboard limit of %d bytes",
				len, DESKTOP_CLIPBOARD_MAX);
		return -EFBIG;
	}
	pthread_mutex_lock(&G.lock);
	int rc = ensure(err, err_size);
	if (rc == 0 && (rc = gnome_clipboard_offer(G.session, data, len)) < 0)
		snprintf(err, err_size, "offering the clipboard: %s", gnome_error(G.session));
	G.owned = rc == 0;
	pthread_mutex_unlock(&G.lock);
	return rc;
}

int desktop__gnome_clipboard_read(enum desktop_selection sel, bool image, void** data,
		size_t* len, int timeout_ms, char* err, size_t err_size)
{
	*data = NULL;
	*len = 0;
	if (sel == DESKTOP_PRIMARY || image)
		return refused(sel, image, err, err_size);
	pthread_mutex_lock(&G.lock);
	int rc = ensure(err, err_size);
	char* text = NULL;
	if (rc == 0)
		rc = gnome_clipboard_read(G.session, timeout_ms, &text, len);
	if (rc == -ENOENT)
		snprintf(err, err_size, "the clipboard is empty or holds no text");
	else if (rc == -EFBIG)
		snprintf(err, err_size, "the clipboard content is over the limit");
	else if (rc < 0 && G.session)
		snprintf(err, err_size, "reading the clipboard: %s", gnome_error(G.session));
	pthread_mutex_unlock(&G.lock);
	*data = text;
	return rc;
}

/* Another owner took the clipboard when Mutter's session says it no longer
 * owns it; deskd knows only its own offers, so "owned" is until the next
 * read finds otherwise. */
bool desktop__gnome_clipboard_owned(enum desktop_selection sel, unsigned long* served)
{
	pthread_mutex_lock(&G.lock);
	bool owned = sel == DESKTOP_CLIPBOARD && G.session && G.owned;
	if (served)
		*served = G.served_base + (G.session ? gnome_clipboard_delivered(G.session) : 0);
	pthread_mutex_unlock(&G.lock);
	return owned;
}

/* Mutter has no "give it up": the offer stays until another owner. */
int desktop__gnome_clipboard_release(enum desktop_selection sel, char* err, size_t err_size)
{
	pthread_mutex_lock(&G.lock);
	G.owned = false;
	pthread_mutex_unlock(&G.lock);
	return 0;
}

unsigned long desktop__gnome_clipboard_delivered(void)
{
	unsigned long n;
	desktop__gnome_clipboard_owned(DESKTOP_CLIPBOARD, &n);
	return n;
}

int desktop__gnome_clipboard_wait_delivered(unsigned long since, int timeout_ms,
		atomic_bool* cancelled)
{
	int64_t end = clock_ms() + timeout_ms;
	/* A paste's requestor is unknown: any transfer counts, and the next
	 * ones of the same paste are waited for (DELIVERY_QUIET_MS). */
	int64_t first = 0, last = 0;
	unsigned long seen = since;
	for (;;) {
		unsigned long now = desktop__gnome_clipboard_delivered();
		int64_t t = clock_ms();
		if (now > seen) {
			seen = now;
			last = t;
			if (!first)
				first = t;
		}
		if (first && (t - last >= DELIVERY_QUIET_MS || t - first >= DELIVERY_QUIET_MAX_MS))
			return 0;
		if (cancelled && atomic_load(cancelled))
			return first ? 0 : -ECANCELED;
		if (!first && t >= end)
			return -ETIMEDOUT;
		clock_sleep_ms(DELIVERY_POLL_MS);
	}
}

void desktop__gnome_clipboard_stop(void)
{
	pthread_mutex_lock(&G.lock);
	gnome_close(G.session);
	G.session = NULL;
	G.owned = false;
	G.served_base = 0;
	pthread_mutex_unlock(&G.lock);
}
