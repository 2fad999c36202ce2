#pragma once

/* A private Xvfb for unit tests that need an X server: started with
 * -displayfd (it picks a free display number), killed with the test
 * (PR_SET_PDEATHSIG). */

#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t xvfb_pid;

/* Start Xvfb on a display it picks (-displayfd); the name goes to name. */
static int xvfb_start(char* name, size_t size)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);	/* never outlive the test */
		close(fds[0]);
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		dup2(devnull, 2);
		char fd[16];
		snprintf(fd, sizeof(fd), "%d", fds[1]);
		/* -noreset: the server must not reset when one test's last
		 * client leaves, or the next test's connection races it. */
		execlp("Xvfb", "Xvfb", "-displayfd", fd, "-screen", "0", "640x480x24",
				"-nolisten", "tcp", "-noreset", (char*)NULL);
		_exit(127);
	}
	close(fds[1]);
	char buf[32] = "";
	size_t got = 0;
	int64_t end = clock_ms() + 20000;
	while (got < sizeof(buf) - 1 && !strchr(buf, '\n') && clock_ms() < end) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t n = read(fds[0], buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
	}
	close(fds[0]);
	int number = atoi(buf);
	if (!strchr(buf, '\n')) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -ENOENT;
	}
	xvfb_pid = pid;
	snprintf(name, size, ":%d", number);
	return 0;
}

static void xvfb_kill(int sig)
{
	if (xvfb_pid <= 0)
		return;
	kill(xvfb_pid, sig);
	waitpid(xvfb_pid, NULL, 0);
	xvfb_pid = 0;
}
