#pragma once
/* Private to gnome/: the PipeWire stream (stream.c), which session.c opens
 * once Mutter names the stream's node; session.c's bounded connect for
 * shell.c; the extension's files. No D-Bus header here (its types are
 * only named). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gnome_stream;

/** Connect to the PipeWire daemon at socket (NULL or "": PipeWire's own
 *  lookup, $PIPEWIRE_REMOTE or $XDG_RUNTIME_DIR/pipewire-0; else an
 *  absolute path, connected to as it is, whatever the environment says),
 *  or through remote_fd when it is not -1 (a connection the portal opened;
 *  the stream owns it from here, also on failure), and consume node's video: BGRx/BGRA/RGBx/RGBA in shm or memfd buffers
 *  (Mutter has no DMA-BUF without a GPU), any size. Returns once the
 *  stream is linked and streaming (at most 2 s); the first frame follows,
 *  usually within 50 ms, once in a while after a second or more. Frames
 *  arrive on PipeWire's loop thread. NULL with a sentence in err.
 *  (PipeWire 0.3.65 lets $PIPEWIRE_NODE override the node.) */
struct gnome_stream* gnome__stream_open(const char* socket, int remote_fd, uint32_t node,
		char* err, size_t err_size);
void gnome__stream_close(struct gnome_stream* st);
/** Free the spare frame buffer (made again at the next frame) and drop our
 *  pages of the stream's buffers. */
void gnome__stream_release(struct gnome_stream* st);
/** The newest frame's number (0: none yet). Only a frame whose pixels
 *  differ from the one before gets a number: Mutter also sends the same
 *  pixels again (at each pointer motion when the cursor is not drawn in). */
uint64_t gnome__stream_seq(struct gnome_stream* st);
/** Wait (bounded) until a frame newer than after arrived. */
int gnome__stream_wait(struct gnome_stream* st, uint64_t after, int timeout_ms,
		uint64_t* seq);
/** An eventfd, written at each frame (EFD_NONBLOCK; read to clear). */
int gnome__stream_fd(struct gnome_stream* st);
/** The newest frame's size (0, 0 before the first). */
void gnome__stream_size(struct gnome_stream* st, int* width, int* height);
/** Copy a rectangle of the newest frame as BGRX (converting from RGB
 *  orders; -EAGAIN before the first frame, -EINVAL for a rectangle
 *  outside it). */
int gnome__stream_read(struct gnome_stream* st, int x, int y, int width, int height,
		uint8_t* dst, int dst_stride, uint64_t* seq);
/** Has the stream failed or ended (node removed, daemon gone)? */
bool gnome__stream_broken(struct gnome_stream* st);

/* ---- session.c, for shell.c ---- */

struct DBusConnection;
struct DBusMessage;
/** A private connection to the bus at address, authenticated and
 *  registered by the deadline (clock_ms); NULL with a sentence in err. */
struct DBusConnection* gnome__connect(const char* address, int64_t deadline, char* err,
		size_t size);

/* An a{sv} entry: a key and one basic value. */
struct gnome__entry {
	const char* key;
	int type;		/* DBUS_TYPE_STRING, _UINT32, _BOOLEAN, or _ARRAY (of strings) */
	const void* value;	/* a pointer to the value; for _ARRAY: const char* const* */
	size_t n;		/* _ARRAY's length */
};
/** Append an a{sv} of these entries to m; false when out of memory. */
bool gnome__append_dict(struct DBusMessage* m, const struct gnome__entry* entries, size_t n);

/** Write all len bytes to fd within timeout_ms (a pipe the app reads at
 *  its pace, or a file): 0 or -errno (-ETIMEDOUT). Sets fd non-blocking. */
int gnome__write_all(int fd, const void* bytes, size_t len, int timeout_ms);

/* ---- portal.c: the desktop portal's session, for session.c ---- */

#define GNOME_PORTAL_BUS "org.freedesktop.portal.Desktop"
#define GNOME_PORTAL_PATH "/org/freedesktop/portal/desktop"
#define GNOME_PORTAL_RD "org.freedesktop.portal.RemoteDesktop"
#define GNOME_PORTAL_SESSION "org.freedesktop.portal.Session"
#define GNOME_PORTAL_CLIPBOARD "org.freedesktop.portal.Clipboard"
struct gnome__portal_session {
	char handle[192];	/* the session's object path */
	uint32_t node;		/* the screen's PipeWire node */
	int width, height;	/* its size, 0 when the portal did not say */
	int pipewire_fd;	/* the PipeWire connection the portal opened, or -1 */
	bool clipboard;		/* Start enabled the portal's Clipboard on it */
};
/** CreateSession, SelectDevices (pointer, keyboard), SelectSources (one
 *  monitor, no pointer drawn), RequestClipboard where the portal has its
 *  Clipboard interface (xdg-desktop-portal 1.18 on), Start (the person's dialog, bounded by
 *  GNOME_CONSENT_MS) and OpenPipeWireRemote on bus, which must not be
 *  dispatched by anyone else meanwhile; the other steps by deadline
 *  (clock_ms). -ECANCELED declined, -EACCES no input granted or ended,
 *  -ETIMEDOUT, -ENOTSUP no portal; a sentence in err. */
int gnome__portal_start(struct DBusConnection* bus, int64_t deadline,
		struct gnome__portal_session* out, char* err, size_t size);
/** Close the session (its Session.Close), bounded. */
void gnome__portal_stop(struct DBusConnection* bus, const char* handle);
/** The version of the portal's interface iface (GNOME_PORTAL_RD, ...; one
 *  bounded round trip; the portal is started by the bus if it is not
 *  running), or -errno (-EIO also when it has no such interface). */
int gnome__portal_version(struct DBusConnection* bus, const char* iface, int timeout_ms);

/* ---- the GNOME Shell extension's files (gnome/shell/, compiled in) ---- */

struct gnome_shell_file {
	const char* path;	/* "/extension.js" */
	const unsigned char* data;
	size_t size;
};
/* Generated by scripts/embed.c; ends with { 0 }. */
extern const struct gnome_shell_file gnome_shell_files[];
