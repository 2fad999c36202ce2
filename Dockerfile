# deskd in a container: its own virtual desktop (Xvfb + openbox), one port.
#   make image          builds it (podman or docker; see the README's "Container")
#   podman run --rm -p 127.0.0.1:7800:7800 -v deskd-state:/state deskd
# The first start generates the token and prints it; later starts (and a
# --token-file) do not print it: `podman exec <container> cat /state/token`.
# Build in the docker format (podman build --format docker) to keep the
# HEALTHCHECK: the OCI format drops it; the probe is GET /healthz either way.
FROM debian:12-slim AS build
WORKDIR /src
COPY scripts/install-deps scripts/
RUN scripts/install-deps build
COPY . .
RUN make -j"$(nproc)" deskd && strip deskd

FROM debian:12-slim
# Files no deskd feature uses are left out as the packages unpack (the file
# says which and how to get them back); every package comes without its
# recommends. The runtime libraries are deskd's own (readelf -d deskd, and
# FFmpeg's four, which record/libav.c loads at the first recording); the
# programs: the X server, window manager, keyboard layout, a terminal, and
# curl for the probes. The session bus is dbus-daemon alone (no system bus,
# no init system): at-spi2-core's gsettings-desktop-schemas needs dconf, whose
# dconf-service wants a session bus package; left to apt that is
# dbus-user-session, which pulls systemd (and its systemd-journal group takes
# GID 999). dbus-x11 is the other provider and needs only dbus-daemon.
COPY deploy/image/dpkg-excludes /etc/dpkg/dpkg.cfg.d/deskd-excludes
RUN apt-get update -qq \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		libmicrohttpd12 libwebsockets17 libjansson4 libpng16-16 zlib1g libdeflate0 libturbojpeg0 \
		libavcodec59 libavformat59 libswscale6 libavutil57 \
		libx11-6 libxext6 libxtst6 libxcomposite1 libxdamage1 libxfixes3 libxrandr2 libxres1 libxkbcommon0 libdbus-1-3 \
		libwayland-client0 \
		dbus-daemon dbus-x11 at-spi2-core \
		xvfb openbox x11-xkb-utils xterm fonts-dejavu-core curl \
	&& apt-get clean \
	&& rm -rf /var/lib/apt/lists/* /var/cache/debconf/*-old /var/lib/dpkg/*-old \
		/var/log/apt /var/log/dpkg.log /var/log/alternatives.log \
	&& find /usr/lib/python3* -name __pycache__ -prune -exec rm -rf {} + \
	&& if dpkg-query -W systemd >/dev/null 2>&1; then echo "systemd got into the image: find what pulled it (apt-cache rdepends --installed systemd)" >&2; exit 1; fi \
	&& groupadd --gid 10001 deskd \
	&& useradd --uid 10001 --gid 10001 --home-dir /state --create-home --shell /usr/sbin/nologin deskd \
	&& chmod 0700 /state
COPY deploy/image/XTerm /etc/deskd/app-defaults/XTerm
COPY --from=build /src/deskd /usr/local/bin/deskd
# Numeric, so Kubernetes' runAsNonRoot can check it; outside Debian's system
# range (100-999), which packages' postinst scripts allocate from.
USER 10001:10001
ENV DESKD_DATA_DIR=/state HOME=/state LANG=C.UTF-8 \
	XUSERFILESEARCHPATH=/etc/deskd/app-defaults/%N
VOLUME /state
EXPOSE 7800
# deskd is PID 1: it reaps every orphan in the container and stops cleanly
# on SIGTERM. Inside the container it must listen on all interfaces; the
# token stays required. Arguments after the image name are added (--launch
# xterm, --virtual 1920x1080, ...).
ENTRYPOINT ["deskd", "--listen", "0.0.0.0:7800"]
# curl is here for this probe and for podman kube play, which runs an
# httpGet probe as `curl -f http://localhost:PORT/PATH` inside the container.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
	CMD ["curl", "-fsS", "-o", "/dev/null", "--max-time", "2", "http://127.0.0.1:7800/healthz"]
