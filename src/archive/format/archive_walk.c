/* archive_walk.c — every link under a group, walked iteratively and to a
 * bounded depth (docs/SECURITY.md, "Hostile archives: second audit"):
 * an explicit stack of the groups still to list, each listed with
 * H5Literate (one level, no recursion), so an archive of 15,000 nested
 * groups costs a stack entry per group waiting, never a C frame per level
 * (HDF5's own H5Lvisit recurses once per level and overflowed the stack).
 * A group is entered once (a second hard link to it is passed to the
 * caller, never entered again), and a group more than ARCHIVE_WALK_MAX_DEPTH
 * levels below the start is refused: a curvsweep archive is a few levels
 * deep (docs/ARCHIVE.md, "On-disk layout"). Also the set of object
 * addresses the walks keep. */
#include "archive_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a set of object addresses ---- */

static uint64_t archive_addr_hash(haddr_t a) {
  uint64_t x = (uint64_t)a * 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 29);
}

int archive_addr_add(archive_addr_set *s, haddr_t a) {
  if (2 * (s->n + 1) > s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 1024;
    haddr_t *slot = calloc(cap, sizeof *slot);
    if (!slot) return -1;
    for (size_t i = 0; i < s->cap; i++) {
      if (!s->slot[i]) continue;
      size_t j = archive_addr_hash(s->slot[i]) & (cap - 1);
      while (slot[j]) j = (j + 1) & (cap - 1);
      slot[j] = s->slot[i];
    }
    free(s->slot);
    s->slot = slot, s->cap = cap;
  }
  size_t j = archive_addr_hash(a) & (s->cap - 1);
  while (s->slot[j]) {
    if (s->slot[j] == a) return 0;
    j = (j + 1) & (s->cap - 1);
  }
  s->slot[j] = a;
  s->n++;
  return 1;
}

void archive_addr_free(archive_addr_set *s) {
  free(s->slot);
  memset(s, 0, sizeof *s);
}

/* ---- the walk ---- */

typedef struct {
  haddr_t addr;
  int depth;      /* levels below the start */
  char *rel;      /* its path from the start ("" for the start) */
} archive_walk_item;

typedef struct {
  const char *start_name, *path;
  archive_walk_fn fn;
  void *ctx;
  archive_walk_item *stack;
  size_t n, cap;
  archive_addr_set groups;  /* the groups entered or waiting */
  const archive_walk_item *at; /* the group being listed */
  int result;               /* what ends the walk: 0, 1 (fn stopped), -1, ARCHIVE_WALK_TOO_DEEP */
  char *deep;
  size_t deep_len;
} archive_walk_state;

/* "/start/rel" into full. */
static void archive_walk_full(const archive_walk_state *W, const char *rel, char *full, size_t len) {
  size_t b = strlen(W->start_name);
  int slash = b > 0 && W->start_name[b - 1] == '/';
  snprintf(full, len, "%s%s%s", W->start_name, slash ? "" : "/", rel);
}

static int archive_walk_push(archive_walk_state *W, haddr_t addr, int depth, const char *rel) {
  if (W->n == W->cap) {
    size_t cap = W->cap ? 2 * W->cap : 64;
    archive_walk_item *p = realloc(W->stack, cap * sizeof *p);
    if (!p) return cs_error(CS_ERR_NOMEM, "out of memory walking the groups of %s", W->path);
    W->stack = p, W->cap = cap;
  }
  char *copy = cs_strdup_printf("%s", rel);
  if (!copy) return cs_error(CS_ERR_NOMEM, "out of memory walking the groups of %s", W->path);
  W->stack[W->n++] = (archive_walk_item){addr, depth, copy};
  return CS_OK;
}

static herr_t archive_walk_link(hid_t g, const char *name, const H5L_info_t *li, void *data) {
  archive_walk_state *W = data;
  const archive_walk_item *at = W->at;
  char *rel = at->rel[0] ? cs_strdup_printf("%s/%s", at->rel, name) : cs_strdup_printf("%s", name);
  if (!rel) {
    cs_error(CS_ERR_NOMEM, "out of memory walking the groups of %s", W->path);
    W->result = -1;
    return -1;
  }
  int r = W->fn(g, name, rel, li, W->ctx);
  if (r != 0) {
    W->result = r > 0 ? 1 : -1;
    free(rel);
    return r > 0 ? 1 : -1;
  }
  if (li->type == H5L_TYPE_HARD) {
    H5O_info_t oi;
    if (H5Oget_info_by_name2(g, name, &oi, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
      char full[768];
      archive_walk_full(W, rel, full, sizeof full);
      archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot open %s", W->path, full);
      W->result = -1;
    } else if (oi.type == H5O_TYPE_GROUP) {
      int added = archive_addr_add(&W->groups, oi.addr);
      if (added < 0) {
        cs_error(CS_ERR_NOMEM, "out of memory walking the groups of %s", W->path);
        W->result = -1;
      } else if (added > 0 && at->depth + 1 > ARCHIVE_WALK_MAX_DEPTH) {
        char full[768];
        archive_walk_full(W, rel, full, sizeof full);
        if (W->deep) cs_copy_str(W->deep, W->deep_len, full);
        cs_error(CS_ERR_INPUT, "%s: damaged or hostile archive: the group %.300s%s lies more than %d "
                 "levels deep (a curvsweep archive is a few levels deep; docs/SECURITY.md, "
                 "\"Hostile archives: second audit\")", W->path, full,
                 strlen(full) > 300 ? "..." : "", ARCHIVE_WALK_MAX_DEPTH);
        W->result = ARCHIVE_WALK_TOO_DEEP;
      } else if (added > 0 && archive_walk_push(W, oi.addr, at->depth + 1, rel) != CS_OK) {
        W->result = -1;
      }
    }
  }
  free(rel);
  return W->result ? -1 : 0;
}

int archive_walk(hid_t start, const char *start_name, const char *path, archive_walk_fn fn,
                 void *ctx, char *deep, size_t deep_len) {
  archive_walk_state W;
  memset(&W, 0, sizeof W);
  W.start_name = start_name, W.path = path, W.fn = fn, W.ctx = ctx;
  W.deep = deep, W.deep_len = deep_len;
  if (deep && deep_len) deep[0] = '\0';
  H5O_info_t root;
  if (H5Oget_info2(start, &root, H5O_INFO_BASIC) < 0) {
    archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot read the group %s", path,
                     start_name[0] ? start_name : "/");
    return -1;
  }
  if (archive_addr_add(&W.groups, root.addr) < 0 || archive_walk_push(&W, root.addr, 0, "") != CS_OK) {
    archive_addr_free(&W.groups);
    free(W.stack);
    cs_error(CS_ERR_NOMEM, "out of memory walking the groups of %s", path);
    return -1;
  }
  while (W.n > 0 && !W.result) {
    archive_walk_item item = W.stack[--W.n];
    // by its path of hard links (so that HDF5 names what it opens)
    hid_t g = item.depth == 0 ? start : H5Oopen(start, item.rel, H5P_DEFAULT);
    if (g < 0) {
      char full[768];
      archive_walk_full(&W, item.rel, full, sizeof full);
      archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot open the group %s", path, full);
      W.result = -1;
    } else {
      W.at = &item;
      hsize_t idx = 0;
      size_t first = W.n;
      herr_t e = H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, &idx, archive_walk_link, &W);
      // its groups popped in name order, as H5Lvisit entered them
      for (size_t i = first, j = W.n; i + 1 < j; i++, j--) {
        archive_walk_item t = W.stack[i];
        W.stack[i] = W.stack[j - 1], W.stack[j - 1] = t;
      }
      if (e < 0 && !W.result) {
        char full[768];
        archive_walk_full(&W, item.rel, full, sizeof full);
        archive_h5_error(CS_ERR_INPUT, "%s: damaged archive: cannot list the group %s", path, full);
        W.result = -1;
      }
      if (item.depth > 0) H5Oclose(g);
    }
    free(item.rel);
  }
  for (size_t i = 0; i < W.n; i++) free(W.stack[i].rel);
  free(W.stack);
  archive_addr_free(&W.groups);
  return W.result;
}
