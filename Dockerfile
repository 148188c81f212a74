# One image for both services and the migration step; compose chooses the command.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml constraints.txt README.md alembic.ini ./
COPY shared shared
COPY coordination coordination
COPY order_service order_service
COPY stock_service stock_service
COPY migrations migrations
COPY inventory inventory
RUN pip install --no-cache-dir -c constraints.txt .
EXPOSE 8081 8082
CMD ["gunicorn", "--bind", "0.0.0.0:8081", "order_service:create_app()"]
