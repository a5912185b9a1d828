<?php
// Echoes the request body (php://input) byte for byte.
header('Content-Type: application/octet-stream');
$in = fopen('php://input', 'rb');
$out = fopen('php://output', 'wb');
stream_copy_to_stream($in, $out);
