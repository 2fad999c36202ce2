/* STUB: replaced by the owner of this file. */
#include "record/record.h"
#include <errno.h>
int safe_output_open(const char* path, char* const* roots, int n_roots,
		struct safe_output** out, char* err, size_t err_size) { return -ENOSYS; }
int safe_output_fd(const struct safe_output* self) { return -1; }
const char* safe_output_staging_path(const struct safe_output* self) { return ""; }
const char* safe_output_path(const struct safe_output* self) { return ""; }
int safe_output_publish(struct safe_output* self) { return -ENOSYS; }
void safe_output_abort(struct safe_output* self) { }
int safe_output_write(struct safe_output* self, const void* buf, size_t len) { return -ENOSYS; }
void safe_output_cleanup_stale(char* const* dirs, int n_dirs) { }
