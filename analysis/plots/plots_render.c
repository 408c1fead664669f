/* plots_render.c — running gnuplot on the report's figures (plots.h) so
 * that nobody who can write into the report directory can change what it
 * runs or where it writes (docs/SECURITY.md, "The report directory"):
 *
 *   - gnuplot works in a private directory, DIR/.render-XXXXXXXXXXXX (mode
 *     0700, made with mkdirat through the report directory's descriptor,
 *     checked to be this user's), which holds the copies of the .dat files
 *     it reads and the PNGs it writes; none of these names is reachable by
 *     anyone else;
 *   - each script reaches gnuplot on its standard input, a pipe fed from
 *     memory (the bytes of NAME.gp, never the file NAME.gp);
 *   - a finished NAME.png is renamed from there into the report directory
 *     (renameat replaces a link planted at the name, never follows it).
 *
 * Below plots.c (the driver) and plots_draw.c (which stages the data). */
#include "output.h"
#include "plots.h"

#include "curvsweep/error.h"
#include "curvsweep/path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int analysis_render_find(const analysis_options *opt, char *path, size_t len) {
  snprintf(path, len, "%s", opt->gnuplot && *opt->gnuplot ? opt->gnuplot : "gnuplot");
  if (strchr(path, '/')) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
  }
  // a bare name: it must answer `NAME --version` with exit 0
  pid_t pid = fork();
  if (pid < 0) return 0;
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, 0), dup2(null, 1), dup2(null, 2);
    char *argv[] = {path, (char *)"--version", NULL};
    execvp(path, argv);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* ---- the private directory ---- */

/* 48 random bits as 12 hex digits (getrandom; the clock and pid when it
 * fails: the name need only be hard to guess ahead, mkdirat refuses a taken one). */
static void analysis_render_suffix(char *buf, size_t len, unsigned attempt) {
  unsigned char r[6];
  if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long x = (unsigned long long)ts.tv_nsec * 2654435761ull ^
                           (unsigned long long)getpid() << 20 ^ (unsigned long long)ts.tv_sec ^ attempt;
    for (int i = 0; i < 6; i++) r[i] = (unsigned char)(x >> (8 * i));
  }
  snprintf(buf, len, "%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5]);
}

int analysis_render_begin(analysis_outdir *dir) {
  dir->render_fd = -1;
  int made = 0;
  for (unsigned attempt = 0; attempt < 64 && !made; attempt++) {
    char suffix[16];
    analysis_render_suffix(suffix, sizeof suffix, attempt);
    snprintf(dir->render_name, sizeof dir->render_name, ".render-%s", suffix);
    if (mkdirat(dir->fd, dir->render_name, 0700) == 0) made = 1;
    else if (errno != EEXIST)
      return cs_error(CS_ERR_IO, "%s/%s: cannot make gnuplot's private directory: %s", dir->path,
                      dir->render_name, strerror(errno));
  }
  if (!made)
    return cs_error(CS_ERR_IO, "%s: cannot make gnuplot's private directory: every name tried is taken",
                    dir->path);
  // what is opened must be the directory just made: this user's, not a
  // link or a directory someone put in its place since
  int fd = openat(dir->fd, dir->render_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  int rc = CS_OK;
  if (fd < 0 || fstat(fd, &st) != 0)
    rc = cs_error(CS_ERR_IO, "%s/%s: cannot open gnuplot's private directory: %s", dir->path,
                  dir->render_name, strerror(errno));
  else if (st.st_uid != geteuid())
    rc = cs_error(CS_ERR_INPUT, "%s/%s: gnuplot's private directory was replaced by another "
                  "user's while analyze ran (docs/SECURITY.md)", dir->path, dir->render_name);
  else if (fchmod(fd, 0700) != 0) /* 0700 whatever the umask */
    rc = cs_error(CS_ERR_IO, "%s/%s: cannot set the mode of gnuplot's private directory: %s",
                  dir->path, dir->render_name, strerror(errno));
  if (rc) {
    if (fd >= 0) close(fd);
    return rc;
  }
  dir->render_fd = fd;
  return CS_OK;
}

int analysis_render_stage(const analysis_outdir *dir, const char *name, const char *buf, size_t n) {
  const char *why = NULL;
  int fd = cs_create_fresh_at(dir->render_fd, name, 0600, &why);
  if (fd >= 0 && cs_write_all(fd, buf, n) != 0) why = strerror(errno);
  if (fd >= 0 && close(fd) != 0 && !why) why = strerror(errno);
  if (fd >= 0 && !why) return CS_OK;
  return cs_error(CS_ERR_IO, "%s/%s/%s: cannot write gnuplot's copy: %s", dir->path, dir->render_name,
                  name, why);
}

void analysis_render_end(analysis_outdir *dir) {
  if (dir->render_fd < 0) return;
  // empty it (only this user can have put anything there), then remove it
  // if its name still holds it
  int lfd = openat(dir->render_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
  if (!d && lfd >= 0) close(lfd);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlinkat(dir->render_fd, e->d_name, 0);
  if (d) closedir(d);
  struct stat mine, there;
  if (fstat(dir->render_fd, &mine) == 0 &&
      fstatat(dir->fd, dir->render_name, &there, AT_SYMLINK_NOFOLLOW) == 0 && mine.st_dev == there.st_dev &&
      mine.st_ino == there.st_ino)
    unlinkat(dir->fd, dir->render_name, AT_REMOVEDIR);
  close(dir->render_fd);
  dir->render_fd = -1;
}

/* ---- one figure ---- */

/* gnuplot's output (stdout and stderr) as one line: the last `len` - 1
 * bytes of it, newlines as " | ", blank lines dropped. */
static void analysis_tail_line(const char *text, size_t n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && used + 4 < len; i++) {
    char c = text[i];
    if (c == '\n' || c == '\r') {
      if (used > 0 && strcmp(buf + (used >= 3 ? used - 3 : 0), " | ") != 0)
        used += (size_t)snprintf(buf + used, len - used, " | ");
      continue;
    }
    buf[used++] = c;
    buf[used] = '\0';
  }
  while (used >= 3 && strcmp(buf + used - 3, " | ") == 0) buf[used -= 3] = '\0';
  while (used > 0 && buf[used - 1] == ' ') buf[--used] = '\0';
}

/* s with every `from` replaced by `to`, into buf (len bytes, cut). gnuplot
 * names the script it read on its standard input "/dev/stdin"; the message
 * names NAME.gp, which holds the same bytes, so its line numbers hold. */
static void analysis_replace(const char *s, const char *from, const char *to, char *buf, size_t len) {
  size_t used = 0, nf = strlen(from), nt = strlen(to);
  while (*s && used + 1 < len) {
    if (!strncmp(s, from, nf) && used + nt + 1 < len) {
      memcpy(buf + used, to, nt), used += nt, s += nf;
      continue;
    }
    buf[used++] = *s++;
  }
  buf[used] = '\0';
}

/* Keep the last cap bytes of what was read (the error is gnuplot's last words). */
static void analysis_keep_tail(char *out, size_t cap, size_t *n, const char *chunk, size_t got) {
  if (*n + got > cap) {
    size_t drop = *n + got - cap;
    if (drop > *n) drop = *n;
    memmove(out, out + drop, *n - drop);
    *n -= drop;
  }
  size_t keep = got < cap ? got : cap;
  memcpy(out + *n, chunk + got - keep, keep);
  *n += keep;
}

/* Feed script (n bytes) to to_fd (non-blocking) while reading from_fd to its
 * end into out (its last cap bytes, their count in *got): neither pipe can
 * fill and stall the other side. A gnuplot that stops reading its input
 * (EPIPE) ends the feeding, not analyze: SIGPIPE is held while writing and
 * a pending one taken back. */
static void analysis_exchange(int to_fd, const char *script, size_t n, int from_fd, char *out, size_t cap,
                              size_t *got) {
  sigset_t pipe_sig, old;
  sigemptyset(&pipe_sig);
  sigaddset(&pipe_sig, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_sig, &old);
  int broken = 0;
  size_t sent = 0;
  *got = 0;
  if (n == 0) close(to_fd), to_fd = -1;
  while (from_fd >= 0) {
    struct pollfd p[2] = {{from_fd, POLLIN, 0}, {to_fd, POLLOUT, 0}};
    if (poll(p, to_fd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (to_fd >= 0 && p[1].revents) {
      ssize_t w = write(to_fd, script + sent, n - sent);
      if (w > 0) sent += (size_t)w;
      int stop = sent == n || (w < 0 && errno != EINTR && errno != EAGAIN);
      if (w < 0 && errno == EPIPE) broken = 1;
      if (stop) close(to_fd), to_fd = -1; /* the end of the script: gnuplot sees EOF */
    }
    if (p[0].revents) {
      char chunk[512];
      ssize_t r = read(from_fd, chunk, sizeof chunk);
      if (r > 0) analysis_keep_tail(out, cap, got, chunk, (size_t)r);
      else if (r == 0 || (errno != EINTR && errno != EAGAIN)) close(from_fd), from_fd = -1;
    }
  }
  if (to_fd >= 0) close(to_fd);
  if (from_fd >= 0) close(from_fd);
  sigset_t pending;
  struct timespec zero = {0, 0};
  if (broken && !sigismember(&old, SIGPIPE) && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
    sigtimedwait(&pipe_sig, NULL, &zero);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int analysis_render(const char *gnuplot, const analysis_outdir *dir, const analysis_plot *P, char *why,
                    size_t why_len) {
  char png[sizeof P->name + 8], gp[sizeof P->name + 8];
  snprintf(png, sizeof png, "%s.png", P->name);
  snprintf(gp, sizeof gp, "\"%s.gp\"", P->name);
  snprintf(why, why_len, "could not be started");
  // the script on standard input, named so that gnuplot's messages carry
  // line numbers ("-" would say line 0); /dev/stdin is the process's own
  // descriptor, not a name in any directory someone else can write
  struct stat st;
  const char *script_arg = lstat("/dev/stdin", &st) == 0 ? "/dev/stdin" : "-";
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  pid_t pid = -1;
  if (pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0) pid = fork();
  if (pid == 0) {
    // descriptors 0-2 from copies above 2, so that none is overwritten first
    int s = fcntl(in[0], F_DUPFD_CLOEXEC, 3), o = fcntl(out[1], F_DUPFD_CLOEXEC, 3);
    if (s < 0 || o < 0 || dup2(s, 0) < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0) _exit(126);
    if (fchdir(dir->render_fd) != 0) {
      dprintf(2, "cannot enter gnuplot's private directory: %s\n", strerror(errno));
      _exit(126);
    }
    char *argv[] = {(char *)"gnuplot", (char *)script_arg, NULL};
    execvp(gnuplot, argv);
    dprintf(2, "cannot run %s: %s\n", gnuplot, strerror(errno));
    _exit(127);
  }
  if (in[0] >= 0) close(in[0]);
  if (out[1] >= 0) close(out[1]);
  char text[2048];
  size_t n = 0;
  if (pid > 0) {
    fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
    analysis_exchange(in[1], P->script ? P->script : "", P->script ? P->script_len : 0, out[0], text,
                      sizeof text, &n);
  } else {
    if (in[1] >= 0) close(in[1]);
    if (out[0] >= 0) close(out[0]);
  }
  int status = 0, waited = pid > 0;
  while (waited && waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) waited = 0;
  char said[900], named[900];
  analysis_tail_line(text, n, said, sizeof said);
  analysis_replace(said, "\"/dev/stdin\"", gp, named, sizeof named);
  int ok = waited && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  int have = ok && fstatat(dir->render_fd, png, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
             st.st_size > 0;
  if (have && renameat(dir->render_fd, png, dir->fd, png) == 0) return 1;
  if (have)
    snprintf(why, why_len, "cannot move %s into %s: %s", png, dir->path, strerror(errno));
  else if (!waited)
    ; /* "could not be started" */
  else if (!WIFEXITED(status))
    snprintf(why, why_len, "killed by signal %d%s%s", WTERMSIG(status), *named ? ": " : "", named);
  else if (!ok)
    snprintf(why, why_len, "exit status %d%s%s", WEXITSTATUS(status), *named ? ": " : "",
             *named ? named : " (no message)");
  else
    snprintf(why, why_len, "exit status 0 but no %s written%s%s", png, *named ? ": " : "", named);
  // neither a partial figure nor a stale one from an earlier report stays
  unlinkat(dir->render_fd, png, 0);
  unlinkat(dir->fd, png, 0);
  return 0;
}
