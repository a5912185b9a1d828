<?php
// An 11 KiB page for the compression test (proxy/tests/compression.rs
// builds the same text to compare).
for ($i = 0; $i < 300; $i++) {
    echo "<p>line $i of a page served by php-fpm</p>\n";
}
