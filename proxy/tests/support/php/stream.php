<?php
// ?mb=N (default 10) streams N MiB in 64 KiB chunks, flushed one by one.
// Every chunk is the same 64-byte block repeated 1024 times, so byte i of
// the body is BLOCK[i % 64] with
// BLOCK = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-\n".
header('Content-Type: application/octet-stream');
$mb = isset($_GET['mb']) ? max(0, (int) $_GET['mb']) : 10;
$block = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-\n";
$chunk = str_repeat($block, 1024);
for ($i = 0; $i < $mb * 16; $i++) {
    echo $chunk;
    flush();
}
