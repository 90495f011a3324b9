# One image for the worker and the web service.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY plugin plugin
COPY indexer indexer
COPY web web
COPY newsfold newsfold
COPY mappings mappings
RUN pip install --no-cache-dir . && useradd --create-home newsfold \
    && mkdir -p /var/lib/newsfold/archive && chown newsfold /var/lib/newsfold/archive
USER newsfold
EXPOSE 8000
CMD ["gunicorn", "--workers", "2", "--threads", "4", "--limit-request-line", "8190", "--bind", "0.0.0.0:8000", "newsfold.web:create_app()"]
