#!/usr/bin/env bash
# Downloads the real data sets stale reads (for machines with internet access) into DIR
# (default ./data; point objective.data_dir or STALE_DATA_DIR at it). Never commit them.
set -euo pipefail
dir=${1:-data}
mkdir -p "$dir"
fetch() {  # url, file
  if [[ -s "$dir/$2" ]]; then echo "have $dir/$2"; return; fi
  echo "fetching $2"
  curl -fL --retry 3 -o "$dir/$2.partial" "$1" && mv "$dir/$2.partial" "$dir/$2"
}
libsvm=https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary
fetch "$libsvm/w7a" w7a.libsvm
fetch "$libsvm/phishing" phishing.libsvm
fetch https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt tinyshakespeare.txt
echo "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed  $dir/tinyshakespeare.txt" | sha256sum -c -
