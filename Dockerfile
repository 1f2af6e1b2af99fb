# trainyard images. No engine runs in CI: tests/integration/63-worker-dockerfile.sh lints this file
# and checks that its build steps are the commands CI runs (cmake configure + build).
#
#   docker build --target daemon -t trainyard .          slim Debian, the daemon only
#   docker build --target worker -t trainyard-worker .   CUDA runtime + NCCL + libfabric/EFA, with
#                                                        trainyard-worker as the entrypoint wrapper
# In the worker image the pod's command becomes `trainyard-worker run -- <command>`; without one
# it runs the reference trainer. Users build their framework on top (FROM trainyard-worker).
# TRAINYARD_PREFLIGHT=1 checks the node first (deploy/examples/pytorchjob.yaml). The worker
# loads CUDA, NCCL and libfabric only when a check or the multi-rank trainer needs them.
ARG DEBIAN_VERSION=bookworm
ARG CUDA_VERSION=13.0.1
ARG UBUNTU_VERSION=ubuntu24.04
ARG EFA_INSTALLER_VERSION=1.43.1

# ---------------------------------------------------------------------------------------------
FROM debian:${DEBIAN_VERSION}-slim AS daemon-build
RUN apt-get update \
    && apt-get install -y --no-install-recommends cmake make gcc libc6-dev pkg-config \
       libmicrohttpd-dev libjansson-dev libsqlite3-dev libcurl4-openssl-dev libyaml-dev \
       libzstd-dev libssl-dev libgnutls28-dev libfabric-dev libmimalloc-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTY_CUDA=OFF \
    && cmake --build build -j "$(nproc)" --target trainyard

FROM debian:${DEBIAN_VERSION}-slim AS daemon
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libmicrohttpd12 libjansson4 \
       libsqlite3-0 libcurl4 libyaml-0-2 libzstd1 libssl3 libgnutls30 libmimalloc2.0 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --home-dir /var/lib/trainyard trainyard
COPY --from=daemon-build /src/build/trainyard /usr/local/bin/trainyard
USER trainyard
WORKDIR /var/lib/trainyard
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/trainyard"]
# Plain HTTP inside the cluster (a Service in front; deploy/deployment.yaml): put TLS in front
# (an ingress, or --tls-cert/--tls-key) before exposing it further.
CMD ["serve", "--listen", "0.0.0.0:8080", "--data-dir", "/var/lib/trainyard", "--allow-insecure-http"]

# ---------------------------------------------------------------------------------------------
# libfabric with the EFA provider, the way AWS ships it (into /opt/amazon/efa), on top of the
# CUDA image of each stage. --skip-kmod: the kernel module belongs to the host, not the image.
FROM nvidia/cuda:${CUDA_VERSION}-devel-${UBUNTU_VERSION} AS worker-build
ARG EFA_INSTALLER_VERSION
RUN apt-get update \
    && apt-get install -y --no-install-recommends cmake make gcc pkg-config curl ca-certificates \
       libmicrohttpd-dev libjansson-dev libsqlite3-dev libcurl4-openssl-dev libyaml-dev \
       libzstd-dev libssl-dev libgnutls28-dev libnccl2 libnccl-dev \
    && curl -fsSL -o /tmp/efa.tar.gz \
       "https://efa-installer.amazonaws.com/aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz" \
    && tar -xzf /tmp/efa.tar.gz -C /tmp \
    && cd /tmp/aws-efa-installer \
    && ./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify \
    && rm -rf /tmp/efa.tar.gz /tmp/aws-efa-installer /var/lib/apt/lists/*
ENV PKG_CONFIG_PATH=/opt/amazon/efa/lib/pkgconfig
WORKDIR /src
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTY_CUDA=ON -DTY_MIMALLOC=OFF \
    && cmake --build build -j "$(nproc)" --target trainyard-worker

FROM nvidia/cuda:${CUDA_VERSION}-runtime-${UBUNTU_VERSION} AS worker
ARG EFA_INSTALLER_VERSION
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl ca-certificates libjansson4 libyaml-0-2 \
       libcurl4t64 libssl3t64 libnccl2 \
    && curl -fsSL -o /tmp/efa.tar.gz \
       "https://efa-installer.amazonaws.com/aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz" \
    && tar -xzf /tmp/efa.tar.gz -C /tmp \
    && cd /tmp/aws-efa-installer \
    && ./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify \
    && rm -rf /tmp/efa.tar.gz /tmp/aws-efa-installer /var/lib/apt/lists/*
# libfabric picks efa where the node has EFA devices, tcp or shm elsewhere (FI_PROVIDER forces).
ENV LD_LIBRARY_PATH=/opt/amazon/efa/lib:/opt/amazon/ofi-nccl/lib:${LD_LIBRARY_PATH} \
    FI_EFA_USE_DEVICE_RDMA=1 \
    TRAINYARD_DATA=/opt/trainyard/examples/corpus.txt
COPY --from=worker-build /src/build/trainyard-worker /usr/local/bin/trainyard-worker
COPY examples/ /opt/trainyard/examples/
WORKDIR /workspace
ENTRYPOINT ["/usr/local/bin/trainyard-worker", "run", "--"]
CMD ["/usr/local/bin/trainyard-worker", "train"]
