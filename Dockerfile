# syntax=docker/dockerfile:1
# skills-sidecar: one static binary (sidecar, injector webhook, lint, verify)
# on an empty (scratch) final stage with only CA roots, running as the
# distroless "nonroot" user id 65532 with nothing to write to, so a
# read-only root file system works. demo-upstream rides
# along for the Helm chart's demo and `helm test`.
#
#   docker build --build-arg VERSION=1.2.3 --build-arg COMMIT=$(git rev-parse HEAD) -t skills-sidecar .
#
# scripts/check-k8s.sh runs the same go build command and checks the result
# is statically linked; keep the two in step.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=0.3.0
ARG COMMIT=unknown
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" -o /out/skills-sidecar ./cmd/skills-sidecar \
 && go build -trimpath -ldflags "-s -w" -o /out/demo-upstream ./cmd/demo-upstream

FROM scratch
ARG VERSION=0.3.0
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="skills-sidecar" \
      org.opencontainers.image.description="Skills and agents extensions for any MCP server, as a Kubernetes sidecar" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.source="https://github.com/skills-sidecar/skills-sidecar" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/skills-sidecar /out/demo-upstream /usr/local/bin/
USER 65532:65532
EXPOSE 17080 17090
ENTRYPOINT ["skills-sidecar"]
