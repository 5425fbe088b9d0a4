# The udnkit manager image the Helm chart deploys (image.repository).
# Not built by CI on the development machines (no container engine there).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/udnkit ./cmd/udnkit

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/udnkit /udnkit
USER 65532:65532
ENTRYPOINT ["/udnkit"]
