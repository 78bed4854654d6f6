# Phalanx operator and scheduler image.
#   docker build -t phalanx:dev .
#   phalanx manifests all --image phalanx:dev | kubectl apply -f -
# One image, two entry points: `phalanx operator ...` and `phalanx scheduler ...`.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY phalanx ./phalanx
# Wheels for the package and its dependencies, built once and copied into a clean stage.
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels \
    && useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin phalanx
# Non-root, matching the Deployments' runAsUser; the root filesystem can be read-only
# (certificates go to /tmp, an emptyDir in the manifests).
USER 65532:65532
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# The services' default ports (phalanx/ports.py): operator webhook 2750, probes 2751,
# metrics 2752; scheduler probes 2753, metrics 2754.
EXPOSE 2750 2751 2752 2753 2754
ENTRYPOINT ["phalanx"]
CMD ["operator"]
