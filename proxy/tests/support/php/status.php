<?php
// ?code=N answers status N with the body "not here";
// ?redirect=1 answers 302 with Location: /elsewhere and no body.
if (isset($_GET['redirect'])) {
    header('Location: /elsewhere');
    exit;
}
if (isset($_GET['code'])) {
    http_response_code((int) $_GET['code']);
    echo "not here";
    exit;
}
echo "ok";
