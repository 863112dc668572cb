PS1='ready> '; clear
/work/main/.venv/bin/python -m attntrace explore -s it-animal
echo done-$((40+2))
PS1='ready> '; clear
/work/main/.venv/bin/python -m attntrace explore -s it-animal
echo done-$((40+2))
PS1='ready> '; clear
/work/main/.venv/bin/python -m attntrace explore -m smollm2 --layer 3
PS1='ready> '; clear
/work/main/.venv/bin/python -m attntrace explore -m smollm2 --layer 3
PS1='ready> '; clear
/work/main/.venv/bin/python -m attntrace explore -s it-animal
echo done-$((40+2))
PS1='ready> '; clear
/work/main/.venv/bin/python -m attntrace explore -m smollm2 --layer 3
PS1='ready> '; clear
/work/main/.venv/bin/python -m attntrace explore -s it-animal
echo done-$((40+2))
PS1='ready> '; clear
/work/main/.venv/bin/python -m attntrace explore -m smollm2 --layer 3
PS1='ready> '; clear
/work/main/.venv/bin/python -m attntrace explore -s it-animal
echo done-$((40+2))
PS1='ready> '; clear
/work/main/.venv/bin/python -m attntrace explore -m smollm2 --layer 3
