# syntax=docker/dockerfile:1
# Multi-stage build: a static shepherd binary on a distroless-style scratch
# base, running as an unprivileged user.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/shepherd ./cmd/shepherd

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/
COPY --from=build /out/shepherd /shepherd
COPY config.example.yaml /etc/shepherd/config.yaml
USER 65532:65532
# The proxy listens on all interfaces inside the container; the default
# 127.0.0.1 would be unreachable from outside it. The admin endpoints (the
# sessions API holds prompts and model output) stay on the container's
# loopback. To reach them from outside, publish 8788 and run with
#   -e SHEPHERD_ADMIN_LISTEN=0.0.0.0:8788 -e SHEPHERD_ADMIN_TOKEN=<secret>
# (shepherd refuses to start with admin on a non-loopback address and no token).
ENV SHEPHERD_LISTEN=0.0.0.0:8787 SHEPHERD_ADMIN_LISTEN=127.0.0.1:8788
EXPOSE 8787 8788
# The image has no shell or curl: `shepherd healthcheck` GETs /healthz on the
# admin address the configuration (file and SHEPHERD_* variables) names and
# exits 0 on 200, 1 otherwise. Add -ready to require the state store too.
HEALTHCHECK --interval=15s --timeout=5s --start-period=5s --retries=3 \
  CMD ["/shepherd", "healthcheck", "-config", "/etc/shepherd/config.yaml"]
ENTRYPOINT ["/shepherd", "-config", "/etc/shepherd/config.yaml"]
