# deskd in a container: its own virtual desktop (Xvfb + openbox), one port.
#   docker build -t deskd .
#   docker run --rm -p 127.0.0.1:7800:7800 -v deskd-state:/state deskd
# The token is printed at startup and kept in /state/token.
FROM debian:12-slim AS build
WORKDIR /src
COPY scripts/install-deps scripts/
RUN scripts/install-deps build
COPY . .
RUN make -j"$(nproc)" deskd

FROM debian:12-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	libmicrohttpd12 libwebsockets17 libjansson4 libpng16-16 libturbojpeg0 \
	libavcodec59 libavformat59 libswscale6 libavutil57 libx11-6 libx11-xcb1 libxcb1 libxext6 \
	libxtst6 libxcomposite1 libxdamage1 libxfixes3 libxrandr2 libxkbcommon0 \
	xvfb openbox x11-xkb-utils xterm fonts-dejavu-core \
	&& rm -rf /var/lib/apt/lists/* \
	&& useradd --system --home-dir /state --create-home deskd
COPY --from=build /src/deskd /usr/local/bin/deskd
USER deskd
ENV DESKD_DATA_DIR=/state
EXPOSE 7800
# Inside the container deskd must listen on all interfaces; the token stays required.
ENTRYPOINT ["deskd", "--listen", "0.0.0.0:7800", "--allow-origin", "http://127.0.0.1:7800", "--allow-origin", "http://localhost:7800"]
HEALTHCHECK CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/7800 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && grep -q ok <&3"]
