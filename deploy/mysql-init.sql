-- The stock service's database beside the order database the image creates.
CREATE DATABASE IF NOT EXISTS stock;
GRANT ALL PRIVILEGES ON stock.* TO 'inventory'@'%';
