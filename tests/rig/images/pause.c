/* The sandbox ("pause") process of every pod on the rig's real nodes: holds the pod's namespaces,
 * reaps the zombies it inherits as PID 1 of a shared PID namespace, and exits 0 when it is told
 * to stop (SIGTERM from the runtime, SIGINT from a terminal). Built with gcc -static by
 * tests/rig/images.ts into the image registry.k8s.io/pause:3.10. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  int saved = errno;
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

static int on(int sig, void (*handler)(int), int flags) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  return sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    static const char version[] = "pause (liqo-bun rig) 3.10\n";
    return write(STDOUT_FILENO, version, sizeof version - 1) < 0;
  }
  if (on(SIGTERM, stop, 0) || on(SIGINT, stop, 0) || on(SIGCHLD, reap, SA_NOCLDSTOP | SA_RESTART)) {
    static const char failed[] = "pause: cannot install signal handlers\n";
    (void)!write(STDERR_FILENO, failed, sizeof failed - 1);
    return 1;
  }
  for (;;) pause();
}
