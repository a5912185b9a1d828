<?php
// Exactly "Hello, World!" (13 bytes, no newline): the FastCGI shootout body.
echo "Hello, World!";