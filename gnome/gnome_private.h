#pragma once
/* Private to gnome/: the PipeWire stream (stream.c), which session.c opens
 * once Mutter names the stream's node. No D-Bus here. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gnome_stream;

/** Connect to the PipeWire daemon at socket (NULL or "": PipeWire's own
 *  lookup, $PIPEWIRE_REMOTE or $XDG_RUNTIME_DIR/pipewire-0; else an
 *  absolute path, connected to as it is, whatever the environment says)
 *  and consume node's video: BGRx/BGRA/RGBx/RGBA in shm or memfd buffers
 *  (Mutter has no DMA-BUF without a GPU), any size. Returns once the
 *  stream is linked and streaming (at most 2 s); the first frame follows,
 *  usually within 50 ms, once in a while after a second or more. Frames
 *  arrive on PipeWire's loop thread. NULL with a sentence in err.
 *  (PipeWire 0.3.65 lets $PIPEWIRE_NODE override the node.) */
struct gnome_stream* gnome__stream_open(const char* socket, uint32_t node,
		char* err, size_t err_size);
void gnome__stream_close(struct gnome_stream* st);
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
