# syntax=docker/dockerfile:1
#
# llmrouter image: a static binary on distroless, running as 65532 (nonroot).
#
#   docker build --build-arg VERSION=v0.1.0 -t llmrouter:v0.1.0 .
#   docker run --rm -e LLMROUTER_LISTEN=0.0.0.0:8080 -p 8080:8080 llmrouter:v0.1.0
#
# With no --config the router serves its embedded default (configs/default.yaml,
# compiled into the binary: simulated providers, no keys, no network). The
# default listeners are 127.0.0.1:8080 (API) and 127.0.0.1:9090 (admin), right
# for a sidecar; outside a pod, publish them with LLMROUTER_LISTEN and
# LLMROUTER_ADMIN_LISTEN as above. deploy/base shows the sidecar setup.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
# Modules first, so a source change does not re-download them.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# CGO off: a static binary for a distroless/static base. -trimpath drops the
# builder's paths; .git is not in the context, so VCS stamping is off and
# VERSION is the version `router version` prints.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/router ./cmd/router

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/router /router
USER 65532:65532
# 8080: OpenAI-compatible API. 9090: /metrics /healthz /readyz /admin/providers.
EXPOSE 8080 9090
ENTRYPOINT ["/router"]
