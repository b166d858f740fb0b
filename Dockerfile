# Felix in a container: Debian, packages from apt only, built with the
# repository's own Makefile. One image serves the control plane and the
# brokers (felix-broker control-plane | run) and carries felixctl and
# felix-inspect for `docker compose exec`. See docs/docker-compose.md.

FROM debian:bookworm-slim AS build
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      gcc make libc6-dev pkg-config libuv1-dev libmicrohttpd-dev libcurl4-openssl-dev libcjson-dev \
      libsqlite3-dev libncurses-dev zlib1g-dev libyaml-dev libsystemd-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY lib lib
COPY felix-broker felix-broker
COPY felixctl felixctl
COPY felix-inspect felix-inspect
COPY completions completions
COPY scripts scripts
COPY tests/tools tests/tools
COPY tests/faults tests/faults
COPY man man
COPY docs/examples docs/examples
COPY packaging packaging
RUN make install PREFIX=/opt/felix

FROM debian:bookworm-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libuv1 libmicrohttpd12 libcurl4 libcjson1 libsqlite3-0 libncurses6 zlib1g libyaml-0-2 libsystemd0 curl ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 7000 --home-dir /var/lib/felix felix \
 && mkdir -p /var/lib/felix/data /var/lib/felix/cp /run/felix \
 && chown -R felix:felix /var/lib/felix /run/felix
COPY --from=build /opt/felix /usr/local
ENV PATH=/usr/local/sbin:/usr/local/bin:$PATH MANPATH=/usr/local/share/man
# Named volumes mounted on /var/lib/felix/data and /var/lib/felix/cp start as
# copies of these directories, so they belong to felix too.
USER felix
WORKDIR /var/lib/felix
# SIGTERM drains (DESIGN.md §5); give it FELIX_SHUTDOWN_DRAIN_TIMEOUT_MS (25 s) and more.
STOPSIGNAL SIGTERM
ENTRYPOINT ["felix-broker"]
